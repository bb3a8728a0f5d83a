// The store conformance suite on embedded chDB (a fresh data directory for this file).
import fs from 'node:fs'
import t from 'tap'
import { ChdbSql } from '../../src/store/chdb.js'
import { tmpDataDir } from '../helpers/server.js'
import { storeConformance } from './conformance.js'

const dir = tmpDataDir()
const sql = new ChdbSql(dir)
t.teardown(async () => {
  await sql.close()
  fs.rmSync(dir, { recursive: true, force: true })
})
t.equal(sql.kind, 'chdb')
storeConformance(t, sql)
