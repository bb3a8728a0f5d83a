// Compact frames (CI 79): the format comes from an earlier full frame of the
// same meter, remembered per decoder instance (bounded, least recently used).
import t from 'tap'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { DecoderPool } from '../../src/decode/pool.js'
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

t.test('the format table is bounded: least recently used entries go first', async (t) => {
  const core = loadWasmCore()
  for (let i = 0; i < 70; i++) decodeTelegramSync(core, fullFrame(20000000 + i, 5), null)
  // the oldest (first) meters were evicted, the newest are kept
  t.equal(decodeTelegramSync(core, compactFrame(20000000, 7), null).status, 'rejected_undecodable')
  t.equal(decodeTelegramSync(core, compactFrame(20000069, 7), null).status, 'ok')
  t.equal(decodeTelegramSync(core, compactFrame(20000010, 7), null).status, 'ok')
})

t.test('state carries over across pool calls (one worker)', async (t) => {
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  await pool.decodeTelegrams([{ hex: fullFrame(33333333, 1), key: null }])
  const [o] = await pool.decodeTelegrams([{ hex: compactFrame(33333333, 2500), key: null }])
  t.equal(o!.status, 'ok')
  if (o!.status === 'ok') t.equal(o!.value, 2.5)
})
