// Compact frames (CI 79): the format comes from an earlier full frame of the
// same meter, remembered per decoder instance (bounded, least recently used).
import t from 'tap'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { crc16 } from '../../src/decode/telegram-inspect.js'
import { DecoderPool } from '../../src/decode/pool.js'

// A full frame: L C M(KAM) A(id, version 1B, type 16) 7A ACC ST CF 0000, then
// records: 04 13 (volume l, 4 bytes), 02 5B (flow temperature, 2 bytes),
// 44 13 (volume at storage 1).
const HDRS = ['0413', '025B', '4413']
function idHex(id: number): string {
  const s = id.toString().padStart(8, '0')
  return s.slice(6, 8) + s.slice(4, 6) + s.slice(2, 4) + s.slice(0, 2)
}
function frame(body: string): string {
  const n = body.length / 2
  return n.toString(16).padStart(2, '0').toUpperCase() + body
}
function full(id: number, litres: number): string {
  const v = litres.toString(16).padStart(8, '0')
  const le = v.slice(6, 8) + v.slice(4, 6) + v.slice(2, 4) + v.slice(0, 2)
  return frame(`442D2C${idHex(id)}1B167A01000000` + `0413${le}025B1200` + `4413${le}`)
}
function compact(id: number, litres: number, headers = HDRS): string {
  const sig = crc16(Buffer.from(headers.join(''), 'hex'), 0, headers.join('').length / 2)
  const v = litres.toString(16).padStart(8, '0')
  const le = v.slice(6, 8) + v.slice(4, 6) + v.slice(2, 4) + v.slice(0, 2)
  const sigLe =
    (sig & 0xff).toString(16).padStart(2, '0') + (sig >> 8).toString(16).padStart(2, '0')
  return frame(`442D2C${idHex(id)}1B1679${sigLe}0000${le}1200${le}`)
}

t.test('a compact frame decodes after a full frame of the same meter', async (t) => {
  const core = loadWasmCore()
  const c = compact(12345678, 4567)
  const before = decodeTelegramSync(core, c, null)
  t.equal(before.status, 'rejected_undecodable')
  if (before.status === 'rejected_undecodable') t.match(before.reason, /compact frame/)
  t.equal(decodeTelegramSync(core, full(12345678, 1000), null).status, 'ok')
  const after = decodeTelegramSync(core, c, null)
  t.equal(after.status, 'ok')
  if (after.status === 'ok') {
    t.equal(after.identifier, '12345678')
    t.equal(after.value, 4.567)
    t.equal(after.unit, 'm3')
  }
  // another meter with the same format has not been seen
  t.equal(decodeTelegramSync(core, compact(87654321, 1), null).status, 'rejected_undecodable')
  // a different signature is not confused with the learnt one
  t.equal(
    decodeTelegramSync(core, compact(12345678, 1, ['0413', '4413']), null).status,
    'rejected_undecodable',
  )
})

t.test('the format table is bounded: least recently used entries go first', async (t) => {
  const core = loadWasmCore()
  for (let i = 0; i < 70; i++) decodeTelegramSync(core, full(20000000 + i, 5), null)
  // the oldest (first) meters were evicted, the newest are kept
  t.equal(decodeTelegramSync(core, compact(20000000, 7), null).status, 'rejected_undecodable')
  t.equal(decodeTelegramSync(core, compact(20000069, 7), null).status, 'ok')
  t.equal(decodeTelegramSync(core, compact(20000010, 7), null).status, 'ok')
})

t.test('state carries over across pool calls (one worker)', async (t) => {
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  await pool.decodeTelegrams([{ hex: full(33333333, 1), key: null }])
  const [o] = await pool.decodeTelegrams([{ hex: compact(33333333, 2500), key: null }])
  t.equal(o!.status, 'ok')
  if (o!.status === 'ok') t.equal(o!.value, 2.5)
})
