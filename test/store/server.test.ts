// The store conformance suite on a real ClickHouse server: the one CLICKHOUSE_URL names, or
// else `meterflow clickhouse-server` started for this file. A database of its own.
import t from 'tap'
import { ServerSql } from '../../src/store/server.js'
import { startClickHouse } from '../helpers/clickhouse.js'
import { storeConformance, upgradeConformance } from './conformance.js'

const own = process.env.CLICKHOUSE_URL ? undefined : await startClickHouse()
const u = new URL(process.env.CLICKHOUSE_URL ?? own!.url)
u.pathname = `/meterflow_conformance_${process.pid}_${Date.now()}`
const url = u.toString()
await ServerSql.ensureDatabase(url)
const sql = new ServerSql(url)
// The upgrade case starts from an empty database.
const up = new URL(url)
up.pathname += '_upgrade'
await ServerSql.ensureDatabase(up.toString())
const upgradeSql = new ServerSql(up.toString())
t.teardown(async () => {
  await sql.exec(`DROP DATABASE IF EXISTS ${up.pathname.slice(1)}`)
  await sql.exec(`DROP DATABASE IF EXISTS ${u.pathname.slice(1)}`)
  await sql.close()
  await upgradeSql.close()
  await own?.stop()
})
const [v] = await sql.query<{ v: string }>('SELECT version() AS v')
t.equal(sql.kind, 'server')
t.match(v?.v, /^\d+\.\d+/, `a real ClickHouse server answers (version ${v?.v})`)
storeConformance(t, sql)
upgradeConformance(t, upgradeSql)
