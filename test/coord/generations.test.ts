// Generations: how current a cache entry is, against a counter every change bumps. An entry
// that applies other instances' changes from their messages (the meter index) is current at
// a generation once it holds every change up to it, whatever order the changes came in.
import t from 'tap'
import { Generations } from '../../src/coord/generations.js'
import { MemoryCoord } from '../../src/coord/memory.js'

const CHECK_MS = 1000

function setup() {
  const coord = new MemoryCoord()
  let now = 0
  const gens = new Generations(coord, 'things', CHECK_MS, () => now)
  const elsewhere = () => coord.incr('gen:things:1') // another instance's change
  const later = () => (now += CHECK_MS)
  return { coord, gens, elsewhere, later }
}

t.test('changes known out of order: current once the ones between are held', async (t) => {
  const { gens, elsewhere } = setup()
  await gens.loading(1)
  t.equal(gens.seenGen(1), 0)
  const g1 = await elsewhere()
  const g2 = await elsewhere()
  const g3 = await gens.bump(1) // our own change, after the two others
  t.same([g1, g2, g3], [1, 2, 3])
  t.equal(gens.seenGen(1), 0, 'ours alone does not make it current')
  gens.known(1, 2)
  t.equal(gens.seenGen(1), 0, 'still missing 1')
  gens.known(1, 1)
  t.equal(gens.seenGen(1), 3, 'current at 3 once 1 and 2 are held')
  gens.known(1, 2)
  t.equal(gens.seenGen(1), 3, 'an old one changes nothing')
})

t.test('stale: waits for the changes being applied, stale only if still behind', async (t) => {
  const { gens, elsewhere, later } = setup()
  await gens.loading(1)
  const g = await elsewhere()
  later()
  let settled = 0
  t.equal(
    await gens.stale(1, async () => {
      settled++
      gens.known(1, g)
    }),
    false,
    'the message was applied meanwhile',
  )
  t.equal(settled, 1)
  await elsewhere()
  later()
  t.equal(await gens.stale(1, async () => {}), true, 'a change never applied (a lost message)')
})

t.test('stale: a shared counter lower than ours (lost) needs no wait', async (t) => {
  const { coord, gens, elsewhere, later } = setup()
  await elsewhere()
  await elsewhere()
  await gens.loading(1)
  t.equal(gens.seenGen(1), 2)
  await coord.set('gen:things:1', '1') // as if Redis restarted empty and one change came
  later()
  let settled = 0
  t.equal(await gens.stale(1, async () => void settled++), true)
  t.equal(settled, 0)
})

t.test('stale without a settle: any other generation is stale, as before', async (t) => {
  const { gens, elsewhere, later } = setup()
  await gens.loading(1)
  await elsewhere()
  t.equal(await gens.stale(1), false, 'not checked again within the interval')
  later()
  t.equal(await gens.stale(1), true)
})
