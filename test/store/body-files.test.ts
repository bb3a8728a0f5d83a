// Large INSERT bodies reach chDB through files (src/store/body-files.ts): a file holds
// exactly the body of its INSERT even when a shorter one follows a longer one, files are
// reused rather than piled up, and none outlives the store, even one whose process died.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { BodyFiles } from '../../src/store/body-files.js'
import { tmpDataDir } from '../helpers/server.js'

t.test('each INSERT reads exactly its body; files are reused, and removed on close', async (t) => {
  const dir = path.join(tmpDataDir(), 'insert-bodies')
  t.teardown(() => fs.rmSync(path.dirname(dir), { recursive: true, force: true }))
  const files = new BodyFiles(dir)
  const seen: string[] = []
  const read = (file: string) => Promise.resolve(seen.push(fs.readFileSync(file, 'utf8')))
  const inline = () => Promise.reject(new Error('the file was not written'))
  const body = (...pieces: string[]) => {
    const parts = pieces.map((p) => Buffer.from(p))
    return [parts, parts.reduce((n, p) => n + p.length, 0)] as const
  }
  await files.with(...body('a'.repeat(5000)), read, inline)
  // a body in pieces is written in order
  await files.with(...body('sh', '', 'o', 'rt'), read, inline)
  // two at once need two files
  await Promise.all([
    files.with(
      ...body('one'),
      async (f) => {
        await new Promise((r) => setTimeout(r, 20))
        await read(f)
      },
      inline,
    ),
    files.with(...body('two'), read, inline),
  ])
  t.same(seen, ['a'.repeat(5000), 'short', 'two', 'one'])
  t.equal(fs.readdirSync(dir).length, 2, 'two files for two INSERTs in flight at most')
  files.close()
  t.same(fs.readdirSync(dir), [], 'nothing left after close')
})

t.test("a dead process's files are removed at the next start, a live one's kept", async (t) => {
  const dir = path.join(tmpDataDir(), 'insert-bodies')
  t.teardown(() => fs.rmSync(path.dirname(dir), { recursive: true, force: true }))
  fs.mkdirSync(dir, { recursive: true })
  // pid_max is at most 4194304 on Linux: no process has a larger pid
  fs.writeFileSync(path.join(dir, '4194305-0-0.body'), 'left by a kill -9')
  fs.writeFileSync(path.join(dir, `${process.pid}-zz-0.body`), 'another store of this process')
  const files = new BodyFiles(dir)
  t.same(fs.readdirSync(dir), [`${process.pid}-zz-0.body`])
  files.close()
})

t.test('a body that cannot be written to a file goes inline', async (t) => {
  const dir = path.join(tmpDataDir(), 'insert-bodies')
  t.teardown(() => fs.rmSync(path.dirname(dir), { recursive: true, force: true }))
  const files = new BodyFiles(dir)
  fs.rmSync(dir, { recursive: true }) // no file can be made now
  const how = await files.with(
    [Buffer.from('x')],
    1,
    () => Promise.resolve('file'),
    () => Promise.resolve('inline'),
  )
  t.equal(how, 'inline')
  files.close()
})
