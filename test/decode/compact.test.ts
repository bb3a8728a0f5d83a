// Compact frames (CI 79): the format comes from an earlier full frame of the
// same meter, remembered per decoder instance (bounded, least recently used).
import t from 'tap'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { DecoderPool } from '../../src/decode/pool.js'
import { formatKey, type FormatBook } from '../../src/decode/format-book.js'
import { compactFrame, fullFrame } from '../helpers/wmbus.js'

t.test('a compact frame decodes after a full frame of the same meter', async (t) => {
  const core = loadWasmCore()
  const c = compactFrame(12345678, 4567)
  const before = decodeTelegramSync(core, c, null)
  t.equal(before.status, 'rejected_undecodable')
  if (before.status === 'rejected_undecodable') t.match(before.reason, /compact frame/)
  t.equal(decodeTelegramSync(core, fullFrame(12345678, 1000), null).status, 'ok')
  const after = decodeTelegramSync(core, c, null)
  t.equal(after.status, 'ok')
  if (after.status === 'ok') {
    t.equal(after.identifier, '12345678')
    t.equal(after.value, 4.567)
    t.equal(after.unit, 'm3')
  }
  // another meter with the same format has not been seen
  t.equal(decodeTelegramSync(core, compactFrame(87654321, 1), null).status, 'rejected_undecodable')
  // a different signature is not confused with the learnt one
  t.equal(
    decodeTelegramSync(core, compactFrame(12345678, 1, ['0413', '4413']), null).status,
    'rejected_undecodable',
  )
})

t.test("the format table holds a worker's share of a fleet, and is bounded", async (t) => {
  const core = loadWasmCore()
  const known = (from: number, n: number) => {
    let ok = 0
    for (let i = from; i < from + n; i++)
      if (decodeTelegramSync(core, compactFrame(20000000 + i, 7), null).status === 'ok') ok++
    return ok
  }
  for (let i = 0; i < 4000; i++) decodeTelegramSync(core, fullFrame(20000000 + i, 5), null)
  t.equal(known(0, 4000), 4000, '4,000 meters: every one is still known')
  for (let i = 4000; i < 104_000; i++) decodeTelegramSync(core, fullFrame(20000000 + i, 5), null)
  t.equal(known(0, 1000), 0, '100,000 meters later, the first are gone')
  t.equal(known(103_000, 1000), 1000, 'the latest are kept')
})

t.test("a meter not seen yet borrows the format of its manufacturer's latest", async (t) => {
  const core = loadWasmCore()
  decodeTelegramSync(core, fullFrame(30000000, 5), null)
  for (let i = 1; i < 50_000; i++) decodeTelegramSync(core, fullFrame(31000000 + i, 5), null)
  const o = decodeTelegramSync(core, compactFrame(39999999, 4567, undefined, true), null)
  t.equal(o.status, 'ok', 'its data CRC agrees with the borrowed format')
  if (o.status === 'ok') t.equal(o.value, 4.567)
})

t.test('state carries over across pool calls (one worker)', async (t) => {
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  await pool.decodeTelegrams([{ hex: fullFrame(33333333, 1), key: null }])
  const [o] = await pool.decodeTelegrams([{ hex: compactFrame(33333333, 2500), key: null }])
  t.equal(o!.status, 'ok')
  if (o!.status === 'ok') t.equal(o!.value, 2.5)
})

t.test("formats are kept per scope: one tenant's full frame never reads another's", async (t) => {
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  await pool.decodeTelegrams([{ hex: fullFrame(44444444, 1), key: null, scope: 1 }])
  const [other, own] = await pool.decodeTelegrams([
    { hex: compactFrame(44444444, 2), key: null, scope: 2 },
    { hex: compactFrame(44444444, 2), key: null, scope: 1 },
  ])
  t.equal(other!.status, 'rejected_undecodable', 'scope 2 has not seen the full frame')
  t.equal(own!.status, 'ok', 'scope 1 has')
})

/** A format book in memory, counting what it is asked. */
function memoryBook() {
  const formats = new Map<string, string>()
  const calls = { find: 0, keep: 0 }
  const book: FormatBook = {
    async find(keys) {
      calls.find++
      const out = new Map<string, string>()
      for (const k of keys) {
        const f = formats.get(formatKey(k))
        if (f) out.set(formatKey(k), f)
      }
      return out
    },
    async keep(fs) {
      calls.keep++
      for (const f of fs) formats.set(formatKey(f), f.format)
    },
  }
  return { book, formats, calls }
}

t.test('with a format book, a pool decodes compact frames another pool learnt', async (t) => {
  const { book, formats, calls } = memoryBook()
  const a = new DecoderPool({ workers: 2, formats: book })
  const b = new DecoderPool({ workers: 2, formats: book })
  t.teardown(() => Promise.all([a.destroy(), b.destroy()]))
  const [f] = await a.decodeTelegrams([{ hex: fullFrame(55555555, 1), key: null, scope: 7 }])
  t.equal(f!.status, 'ok')
  t.equal(formats.size, 1, 'the learnt format went into the book')
  await a.decodeTelegrams([{ hex: fullFrame(55555555, 2), key: null, scope: 7 }])
  t.equal(calls.keep, 1, 'a format the worker knew already is not kept again')
  const outs = await b.decodeTelegrams([
    { hex: compactFrame(55555555, 2500), key: null, scope: 7 },
    { hex: compactFrame(55555555, 2500), key: null, scope: 8 },
    { hex: compactFrame(66666666, 1), key: null, scope: 7 },
  ])
  t.same(
    outs.map((o) => o.status),
    ['ok', 'rejected_undecodable', 'rejected_undecodable'],
    'the other pool reads the known meter; other scopes and unseen meters stay unreadable',
  )
  if (outs[0]!.status === 'ok') t.equal(outs[0]!.value, 2.5)
  const found = calls.find
  const [again] = await b.decodeTelegrams([
    { hex: compactFrame(55555555, 2600), key: null, scope: 7 },
  ])
  t.equal(again!.status, 'ok')
  t.equal(calls.find, found, 'once taught, the worker reads it without asking the book')
})

t.test('a bad entry in the book is refused by the decoder, never trusted', async (t) => {
  const { book, formats } = memoryBook()
  const teacher = new DecoderPool({ workers: 1, formats: book })
  const pool = new DecoderPool({ workers: 1, formats: book })
  t.teardown(() => Promise.all([teacher.destroy(), pool.destroy()]))
  await teacher.decodeTelegrams([{ hex: fullFrame(77777777, 1), key: null }])
  const [key] = [...formats.keys()]
  formats.set(key!, 'ff' + formats.get(key!)!.slice(2)) // a length byte no format has
  const [o] = await pool.decodeTelegrams([{ hex: compactFrame(77777777, 5), key: null }])
  t.equal(o!.status, 'rejected_undecodable')
})
