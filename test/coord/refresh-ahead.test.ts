// The cache of tokens, users and webhook endpoints (src/coord/refresh-ahead.ts): a request
// waits for the store only when an entry is missing or expired; a hot entry is renewed in the
// background.
import t from 'tap'
import { RefreshAhead } from '../../src/coord/refresh-ahead.js'

/** A loader whose calls are counted and answered by hand. */
function loader() {
  const calls: { key: string; resolve: (v: string) => void; reject: (e: Error) => void }[] = []
  const load = (key: string) =>
    new Promise<string>((resolve, reject) => calls.push({ key, resolve, reject }))
  return { calls, load }
}

const tick = () => new Promise((r) => setImmediate(r))

/** A cache (max age 2 s) whose entry 'k' was loaded as 'v1' at time 0; `clock.now` moves it. */
async function primed() {
  const clock = { now: 0 }
  const l = loader()
  const c = new RefreshAhead(l.load, 2000, () => clock.now)
  const first = c.get('k')
  l.calls[0]!.resolve('v1')
  await first
  return { c, l, clock }
}

t.test('concurrent misses share one load; a fresh entry loads nothing', async (t) => {
  let now = 0
  const l = loader()
  const c = new RefreshAhead(l.load, 2000, () => now)
  const a = c.get('k')
  const b = c.get('k')
  t.equal(l.calls.length, 1, 'one load for two waiting requests')
  l.calls[0]!.resolve('v1')
  t.same(await Promise.all([a, b]), ['v1', 'v1'])
  now = 999
  t.equal(await c.get('k'), 'v1')
  t.equal(l.calls.length, 1, 'younger than half the age: served, nothing loaded')
})

t.test('past half its age an entry is served and renewed once in the background', async (t) => {
  const { c, l, clock } = await primed()
  clock.now = 1500
  t.equal(await c.get('k'), 'v1', 'served at once from the entry (the load is not answered yet)')
  t.equal(await c.get('k'), 'v1')
  t.equal(l.calls.length, 2, 'one renewal for both requests')
  l.calls[1]!.resolve('v2')
  await tick()
  clock.now = 2400 // the first entry would have expired; the renewal began 900 ms ago
  t.equal(await c.get('k'), 'v2', 'the renewed value, aged from when its load began')
  t.equal(l.calls.length, 2)
})

t.test('an expired entry is waited for, never served', async (t) => {
  const { c, l, clock } = await primed()
  clock.now = 2000
  const p = c.get('k')
  let settled = false
  void p.then(() => (settled = true))
  await tick()
  t.notOk(settled, 'the request waits for the load')
  l.calls[1]!.resolve('v2')
  t.equal(await p, 'v2')
})

t.test('a failed renewal keeps the entry until it expires; then the error is seen', async (t) => {
  const { c, l, clock } = await primed()
  clock.now = 1200
  t.equal(await c.get('k'), 'v1')
  l.calls[1]!.reject(new Error('store down'))
  await tick()
  clock.now = 1900
  t.equal(await c.get('k'), 'v1', 'still fresh: served (and another renewal is tried)')
  l.calls[2]!.reject(new Error('store down'))
  await tick()
  clock.now = 2100
  const p = c.get('k')
  l.calls[3]!.reject(new Error('store down'))
  await t.rejects(p, /store down/, 'expired and not renewed: the request gets the error')
})

t.test('clear forgets entries and what loads begun before it read', async (t) => {
  const { c, l, clock } = await primed()
  clock.now = 1500
  await c.get('k') // starts a renewal
  t.equal(l.calls.length, 2)
  c.clear() // a revocation while the renewal reads the old row
  l.calls[1]!.resolve('stale')
  await tick()
  const p = c.get('k')
  t.equal(l.calls.length, 3, 'after clear, the next request loads again')
  l.calls[2]!.resolve('after')
  t.equal(await p, 'after', 'the renewal begun before clear was not kept')
})

t.test('set serves what was just stored; delete forgets a key and its load', async (t) => {
  const { c, l, clock } = await primed()
  clock.now = 1500
  await c.get('k') // starts a renewal
  c.set('k', 'saved')
  l.calls[1]!.resolve('older')
  await tick()
  t.equal(await c.get('k'), 'saved', 'the renewal begun before set was not kept')
  c.delete('k')
  const p = c.get('k')
  t.equal(l.calls.length, 3, 'deleted: the next request loads')
  l.calls[2]!.resolve('fresh')
  t.equal(await p, 'fresh')
})

t.test('a load that ends after another key was deleted is not kept, and not reused', async (t) => {
  const l = loader()
  const c = new RefreshAhead(l.load, 2000, () => 0)
  const a = c.get('a')
  c.delete('b') // another key changed while 'a' was being read
  l.calls[0]!.resolve('a1')
  t.equal(await a, 'a1', 'the waiting request gets what was read')
  const again = c.get('a')
  t.equal(l.calls.length, 2, 'the next request loads again instead of reusing the ended load')
  l.calls[1]!.resolve('a2')
  t.equal(await again, 'a2')
})

t.test('unknown keys do not grow the cache without bound', async (t) => {
  let now = 0
  let loads = 0
  const c = new RefreshAhead(
    async (k: number) => {
      loads++
      return k
    },
    2000,
    () => now,
  )
  for (let i = 0; i < 10_000; i++) await c.get(i)
  now = 5000
  await c.get(-1) // the 10,001st key: every expired entry is swept
  loads = 0
  now = 5001
  await c.get(-1)
  await c.get(1)
  t.equal(loads, 1, 'the new key stayed, the expired ones were swept')
})
