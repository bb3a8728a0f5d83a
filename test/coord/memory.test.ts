// Coordination conformance over the in-process MemoryCoord (the embedded default).
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { claimBound, MemoryCoord } from '../../src/coord/memory.js'
import { coordConformance } from './conformance.js'

coordConformance(t, async () => {
  const clock = new ManualClock()
  const coord = new MemoryCoord(() => clock.now())
  t.teardown(() => coord.close())
  // One process, one instance: the "peer" is the same object.
  return { coord, peer: coord, clock }
})

t.test('claimed values: the oldest go first past the bound, which follows the heap', async (t) => {
  const clock = new ManualClock()
  const coord = new MemoryCoord(() => clock.now(), 3)
  t.teardown(() => coord.close())
  t.same(await coord.claimValues(['a', 'b', 'c'], [1, 2, 3], 60_000), [null, null, null])
  clock.advance(1000)
  t.same(await coord.claimValues(['d', 'b'], [4, 5], 60_000), [null, 2], 'a made room for d')
  t.same(await coord.claimValues(['a'], [6], 60_000), [null], 'a is new again; b made room')
  t.same(await coord.claimValues(['c', 'b'], [7, 8], 60_000), [3, null], 'c held, b new')
  t.equal(claimBound(4 * 2 ** 30), 5_965_232, 'a twentieth of a 4 GiB heap at 36 bytes a key')
  t.equal(claimBound(2 ** 20), 10_000, 'never under 10,000')
})
