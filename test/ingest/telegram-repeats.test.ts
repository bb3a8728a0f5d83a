// The repeat rule on its own (no storage: one mode): first sighting, repeats, retries, window.
// End to end through /reportData in both modes: test/ingest/telegrams.test.ts.
import t from 'tap'
import { MemoryCoord } from '../../src/coord/memory.js'
import { findRepeats } from '../../src/ingest/telegram-repeats.js'

const s = (identifier: string, fingerprint: number, recordedAt: number) => ({
  ws: 1,
  identifier,
  fingerprint,
  recordedAt,
})

t.test('first sighting, repeats in the batch and later, retries, other meters', async (t) => {
  let now = 1_000_000
  const coord = new MemoryCoord(() => now)
  t.same(
    await findRepeats(coord, 600_000, [
      s('m1', 7, 100),
      s('m1', 7, 120),
      s('m2', 7, 130),
      s('m1', 8, 140),
    ]),
    [null, 100, null, null],
    'same meter and fingerprint, other recorded_at: repeat of 100',
  )
  t.same(await findRepeats(coord, 600_000, [s('m1', 7, 100)]), [null], 'same recorded_at: a retry')
  t.same(await findRepeats(coord, 600_000, [s('m1', 7, 160)]), [100], 'a later gateway')
  now += 600_001
  t.same(await findRepeats(coord, 600_000, [s('m1', 7, 170)]), [null], 'after the window: new')
  t.same(
    await findRepeats(coord, 600_000, [
      { ...s('m1', 9, 1), ws: 2 },
      { ...s('m1', 9, 2), ws: 3 },
    ]),
    [null, null],
    'other workspaces',
  )
})

t.test('window 0: off', async (t) => {
  const coord = new MemoryCoord()
  t.same(await findRepeats(coord, 0, [s('m1', 7, 100), s('m1', 7, 120)]), [null, null])
})
