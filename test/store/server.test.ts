// The store conformance suite on a ClickHouse server: runs when CLICKHOUSE_URL is set
// (e.g. `docker compose up clickhouse` and CLICKHOUSE_URL=http://meterflow:secret@127.0.0.1:8123/meterflow),
// in a database of its own that is dropped afterwards; skipped with a notice otherwise.
import t from 'tap'
import { ServerSql } from '../../src/store/server.js'
import { storeConformance } from './conformance.js'

const base = process.env.CLICKHOUSE_URL
if (!base) {
  t.comment('CLICKHOUSE_URL not set: ClickHouse server conformance tests SKIPPED')
  t.pass('skipped: no CLICKHOUSE_URL', { skip: 'CLICKHOUSE_URL not set' })
} else {
  const u = new URL(base)
  u.pathname = `/meterflow_conformance_${process.pid}_${Date.now()}`
  const url = u.toString()
  await ServerSql.ensureDatabase(url)
  const sql = new ServerSql(url)
  t.teardown(async () => {
    await sql.exec(`DROP DATABASE IF EXISTS ${u.pathname.slice(1)}`)
    await sql.close()
  })
  t.equal(sql.kind, 'server')
  storeConformance(t, sql)
}
