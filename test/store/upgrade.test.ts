// Schema upgrades on embedded chDB keep stored data (conformance.ts, `upgradeConformance`):
// a file of its own, as chDB binds one data directory per process and the case needs an
// empty one. server.test.ts runs the same case on a ClickHouse server.
import fs from 'node:fs'
import t from 'tap'
import { ChdbSql } from '../../src/store/chdb.js'
import { tmpDataDir } from '../helpers/server.js'
import { upgradeConformance } from './conformance.js'

const dir = tmpDataDir()
const sql = new ChdbSql(dir)
t.teardown(async () => {
  await sql.close()
  fs.rmSync(dir, { recursive: true, force: true })
})
upgradeConformance(t, sql)
