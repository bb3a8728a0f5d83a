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
  t.same(await coord.claimValues(['a', 'b', 'c'], ['1', '2', '3'], 60_000), [null, null, null])
  clock.advance(1000)
  t.same(await coord.claimValues(['d', 'b'], ['4', '5'], 60_000), [null, '2'], 'd set, b held')
  t.same(
    await coord.claimValues(['a', 'b', 'c', 'd'], ['6', '7', '8', '9'], 60_000),
    [null, '2', '3', '4'],
    'a, the oldest, made room for d: it is set again (and b made room for it)',
  )
  t.same(await coord.claimValues(['x'], ['0'], 60_000), [null])
  t.same(
    await coord.claimValues(['c', 'd', 'a'], ['1', '1', '1'], 60_000),
    [null, '4', '6'],
    'c, then the oldest, made room for x',
  )
  t.equal(claimBound(4 * 2 ** 30), 1_431_655, 'a tenth of a 4 GiB heap at 300 bytes a key')
  t.equal(claimBound(2 ** 20), 10_000, 'never under 10,000')
})
