// Each instance keeps a workspace's meters in memory. Another instance's change reaches it
// as a message naming the meters and the generation the change made: the index takes those
// meters' rows from the store, not the whole workspace again (a reload of 320,000 meters
// took ~1.8 s while every request of the workspace waited). A message from an older
// release, or one that was missed, still drops the index for a whole reload.
import t from 'tap'
import { MemoryCoord } from '../../src/coord/memory.js'
import { CACHE_CHECK_MS } from '../../src/coord/generations.js'
import { newMeter } from '../../src/store/meter-row.js'
import { MeterRepo } from '../../src/store/meters.js'
import { openTmpStore } from '../helpers/store.js'

const tmp = await openTmpStore()
t.teardown(() => tmp.close())
// Two instances: one coordination store (its generations and messages), one store.
const coord = new MemoryCoord()
const a = new MeterRepo(tmp.store, coord)
const b = new MeterRepo(tmp.store, coord)
await a.init()
await b.init()

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** A's answer for `identifier` once it holds `want` (or after 2 s: whatever it holds). */
async function seenByA(ws: number, identifier: string, want: boolean): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (((await a.byIdentifier(ws, identifier)) !== null) === want) return want
    await sleep(10)
  }
  return !want
}

t.test('meters created, renamed and removed elsewhere reach the index one by one', async (t) => {
  const ws = 1
  await b.createMany(ws, [newMeter('m1')])
  t.ok(await a.byIdentifier(ws, 'm1'), 'loaded whole once')
  t.equal(a.wholeLoads, 1)

  await b.createMany(ws, [newMeter('m2'), newMeter('m3')])
  t.equal(await seenByA(ws, 'm3', true), true, 'new meters found')
  t.ok(await a.byIdentifier(ws, 'm2'))

  const m2 = (await b.byIdentifier(ws, 'm2'))!
  await b.save({ ...m2, meter_identifier: 'm2-renamed', name: 'cellar' })
  t.equal(await seenByA(ws, 'm2', false), false, 'the old identifier is gone')
  t.equal((await a.byIdentifier(ws, 'm2-renamed'))?.name, 'cellar', 'the new one is found')
  t.equal((await a.byId(ws, m2.id))?.meter_identifier, 'm2-renamed')

  const m3 = (await b.byIdentifier(ws, 'm3'))!
  await b.delete(m3)
  t.equal(await seenByA(ws, 'm3', false), false, 'a deleted meter is gone')
  t.equal(await a.byId(ws, m3.id), null)

  await sleep(CACHE_CHECK_MS + 100)
  t.ok(await a.byIdentifier(ws, 'm1'))
  t.equal(a.wholeLoads, 1, 'no whole reload, also past the generation check')
})

t.test('a missed message: the generation check reloads the index whole', async (t) => {
  const ws = 2
  t.equal(await a.byIdentifier(ws, 'x1'), null)
  const before = a.wholeLoads
  // A does not hear B's creation.
  const heard = (a as unknown as { heard: (m: string) => void }).heard
  ;(a as unknown as { heard: (m: string) => void }).heard = () => {}
  await b.createMany(ws, [newMeter('x1')])
  ;(a as unknown as { heard: (m: string) => void }).heard = heard
  t.equal(await a.byIdentifier(ws, 'x1'), null, 'not known yet')
  await sleep(CACHE_CHECK_MS + 100)
  t.ok(await a.byIdentifier(ws, 'x1'), 'found within the bound')
  t.equal(a.wholeLoads, before + 1, 'by a whole reload')
})

t.test('a message naming no meters (an older release) drops the index', async (t) => {
  const ws = 3
  await b.createMany(ws, [newMeter('y1')])
  t.ok(await a.byIdentifier(ws, 'y1'))
  const before = a.wholeLoads
  await coord.publish('meters', `an-older-instance:${ws}`)
  t.ok(await a.byIdentifier(ws, 'y1'))
  t.equal(a.wholeLoads, before + 1, 'reloaded whole')
})
