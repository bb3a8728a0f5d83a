// The INSERT body writer (src/store/body-writer.ts) and the group commit's joining of rows
// given as text and as bytes: the bytes are exactly the UTF-8 of the text, whatever the size.
import t from 'tap'
import { BlockPool, BodyWriter, POOL_BLOCK_BYTES } from '../../src/store/body-writer.js'
import { joinRows } from '../../src/store/group-commit.js'

t.test('nothing written: an empty body and no buffer kept', async (t) => {
  t.equal(new BodyWriter().take().length, 0)
})

t.test('many rows, multi-byte characters, past every growth step', async (t) => {
  const w = new BodyWriter()
  let expected = ''
  for (let i = 0; i < 20_000; i++) {
    const line = `{"i":${i},"unit":"m³","note":"Zähler ${'€'.repeat(i % 7)} 🔥"}\n`
    w.text(line)
    expected += line
  }
  const body = w.take()
  t.ok(body.length > 1 << 20, 'grew past a megabyte')
  t.equal(body.toString('utf8'), expected)
  t.equal(body.length, Buffer.byteLength(expected))
})

t.test('joinRows: text, bytes and a mix give the same bytes', async (t) => {
  const a = '{"a":"ä"}\n'
  const b = '{"b":2}\n'
  t.equal(joinRows([a, b]).toString(), a + b)
  t.equal(joinRows([Buffer.from(a)]).toString(), a)
  t.equal(joinRows([Buffer.from(a), b]).toString(), a + b)
})

t.test('bytes between texts: written where they were given, text around them kept', async (t) => {
  const w = new BodyWriter()
  let expected = ''
  for (let i = 0; i < 3_000; i++) {
    const head = `{"i":${i},"raw_payload":`
    const raw = JSON.stringify(`{"telegram":"${'A1'.repeat(i % 900)}","ä":"€"}`)
    w.text(head)
    w.bytes(new Uint8Array(Buffer.from(raw)))
    w.text('}\n')
    expected += head + raw + '}\n'
  }
  t.equal(w.take().toString('utf8'), expected)
})

t.test('a large body comes in blocks, in order, none of them copied into another', async (t) => {
  const w = new BodyWriter()
  let expected = ''
  for (let i = 0; i < 2_000; i++) {
    const head = `${i}\tsaldo\tZähler ${'€'.repeat(i % 5)}\t`
    const raw = Buffer.from(`{"telegram":"${'B2'.repeat(1000)}"}`)
    w.text(head)
    w.bytes(raw)
    w.text('\n')
    expected += head + raw.toString() + '\n'
  }
  const parts = w.takeParts()
  t.ok(parts.length > 3, `${parts.length} blocks`)
  t.ok(
    parts.every((p) => p.length <= 1 << 20),
    'no block past a megabyte',
  )
  t.equal(Buffer.concat(parts).toString('utf8'), expected)
  t.equal(joinRows([parts, 'x\n']).toString('utf8'), expected + 'x\n', 'joinRows takes pieces too')
})

t.test(
  'with a pool: blocks come from it, go back on release, and serve the next body',
  async (t) => {
    const pool = new BlockPool(4)
    const write = (w: BodyWriter, rows: number, tag: string) => {
      let expected = ''
      for (let i = 0; i < rows; i++) {
        const head = `${tag}${i}\tZähler ${'€'.repeat(i % 5)}\t`
        const raw = Buffer.from(`{"telegram":"${'C3'.repeat(300)}"}`)
        w.text(head)
        w.bytes(raw)
        w.text('\n')
        expected += head + raw.toString() + '\n'
      }
      return expected
    }
    const first = new BodyWriter(pool)
    const expected = write(first, 600, 'a')
    const parts = first.takeParts()
    t.ok(parts.length >= 2, `${parts.length} blocks`)
    t.ok(
      parts.every((p) => p.buffer.byteLength === POOL_BLOCK_BYTES),
      "every block is one of the pool's",
    )
    t.equal(Buffer.concat(parts).toString('utf8'), expected)
    t.equal(pool.idle, 0, 'nothing idle while the body is in use')
    first.release()
    t.equal(pool.idle, Math.min(4, parts.length), 'released blocks are idle again, at most the cap')

    const second = new BodyWriter(pool)
    const again = write(second, 100, 'b')
    const reused = second.takeParts()
    t.equal(Buffer.concat(reused).toString('utf8'), again, 'the next body reads right')
    t.ok(
      parts.some((p) => p.buffer === reused[0]!.buffer),
      'its first block is one the first body gave back',
    )
    t.equal(pool.idle, Math.min(4, parts.length) - 1)
  },
)

t.test(
  'with a pool: a piece larger than a block gets a block of its own, not pooled',
  async (t) => {
    const pool = new BlockPool()
    const w = new BodyWriter(pool)
    const big = Buffer.alloc(POOL_BLOCK_BYTES + 10, 0x41)
    w.text('head\t')
    w.bytes(big)
    w.text('\n')
    const parts = w.takeParts()
    t.equal(Buffer.concat(parts).toString('latin1'), 'head\t' + big.toString('latin1') + '\n')
    w.release()
    t.equal(pool.idle, 1, 'only the pooled block went back')
  },
)
