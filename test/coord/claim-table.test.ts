// The in-process coordinator's table of claimed keys (src/coord/claim-table.ts) against a
// plain model (a Map in insertion order): random keys, time moving on, a bound well under
// the keys used, so it grows, expires from the front, drops the oldest and deletes inside
// probe runs (backward shift) all the time.
import t from 'tap'
import { ClaimTable } from '../../src/coord/claim-table.js'

/** What the table must do: keys in insertion order, expired ones and the oldest dropped. */
class Model {
  private readonly m = new Map<string, { value: number; expires: number }>()
  constructor(private readonly max: number) {}
  claim(key: string, value: number, now: number, ttl: number): number | null {
    for (const [k, e] of this.m) {
      if (e.expires > now) break
      this.m.delete(k)
    }
    const e = this.m.get(key)
    if (e) return e.value
    if (this.m.size === this.max) this.m.delete(this.m.keys().next().value!)
    this.m.set(key, { value, expires: now + ttl })
    return null
  }
  get size() {
    return this.m.size
  }
}

t.test('claims as the model does, over 200,000 random claims', async (t) => {
  let seed = 42
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return seed % n
  }
  const max = 3000
  const table = new ClaimTable(max)
  const model = new Model(max)
  let now = 1_700_000_000_000
  let differ = 0
  let held = 0
  for (let i = 0; i < 200_000; i++) {
    now += rand(3)
    const key = `tgrep:1:m${rand(8000)}:${rand(4).toString(16)}`
    table.expire(now)
    const got = table.claim(key, i, now, 5000)
    const want = model.claim(key, i, now, 5000)
    if (got !== want) differ++
    if (want !== null) held++
  }
  t.equal(differ, 0, 'every answer the model gives')
  t.ok(held > 10_000, `keys were found held (${held})`)
  t.equal(table.size, model.size, 'as many keys kept')
  t.ok(table.size <= max, 'never more than the bound')
})

t.test('an expired key not at the front (the clock went back) is set again', async (t) => {
  const table = new ClaimTable(100)
  t.equal(table.claim('a', 1, 10_000, 1000), null)
  t.equal(table.claim('b', 2, 5_000, 1000), null, 'b expires at 6,000, before a')
  table.expire(7_000)
  t.equal(table.size, 2, 'a, at the front, is live: nothing leaves')
  t.equal(table.claim('b', 3, 7_000, 1000), null, 'b expired: set again')
  t.equal(table.claim('b', 4, 7_500, 1000), 3, 'and held')
})
