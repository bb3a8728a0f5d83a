// Coordination conformance over the in-process MemoryCoord (the embedded default).
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { MemoryCoord } from '../../src/coord/memory.js'
import { coordConformance } from './conformance.js'

coordConformance(t, async () => {
  const clock = new ManualClock()
  const coord = new MemoryCoord(() => clock.now())
  t.teardown(() => coord.close())
  // One process, one instance: the "peer" is the same object.
  return { coord, peer: coord, clock }
})
