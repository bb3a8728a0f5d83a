// The store conformance suite on embedded chDB (a fresh data directory for this file).
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { FILE_BODY_MIN_BYTES } from '../../src/store/body-files.js'
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

t.test(
  'bodies from FILE_BODY_MIN_BYTES reach the engine through a file, smaller ones inline',
  async (t) => {
    await sql.exec('CREATE TABLE body_path (n UInt32, s String) ENGINE = MergeTree ORDER BY n')
    // A body file is reused and cut to the length of the last body written to it.
    const fileSizes = () =>
      fs
        .readdirSync(path.join(dir, 'insert-bodies'))
        .map((f) => fs.statSync(path.join(dir, 'insert-bodies', f)).size)
    const body = (rows: number, from: number) => {
      let s = ''
      for (let i = 0; i < rows; i++) s += `${from + i}\t${'x'.repeat(90)}\n`
      return Buffer.from(s)
    }
    const small = body(100, 0)
    t.ok(small.length < FILE_BODY_MIN_BYTES, `${small.length} bytes`)
    await sql.insert('body_path', small, { columns: ['n', 's'] })
    t.notOk(fileSizes().includes(small.length), 'no file for a small body')
    // Between the threshold and four times it: the sizes a half-loaded gateway's INSERTs have.
    const mid = body(1_000, 100)
    t.ok(
      mid.length > FILE_BODY_MIN_BYTES && mid.length < 4 * FILE_BODY_MIN_BYTES,
      `${mid.length} bytes`,
    )
    await sql.insert('body_path', mid, { columns: ['n', 's'] })
    t.ok(fileSizes().includes(mid.length), 'the body went through a file')
    const [c] = await sql.query<{ rows: string; top: string; len: string }>(
      'SELECT count() AS rows, max(n) AS top, min(length(s)) AS len FROM body_path',
    )
    t.same([Number(c!.rows), Number(c!.top), Number(c!.len)], [1_100, 1_099, 90])
  },
)
