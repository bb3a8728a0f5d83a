// The coordination conformance suite: the same cases over MemoryCoord (memory.test.ts) and
// RedisCoord against a real redis-server (redis.test.ts), so rate limits, sequences, leases,
// claims and messages mean the same with one instance or many.
import type { Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { HEARTBEAT_MARK, type Coord } from '../../src/coord/coord.js'

export interface CoordFixture {
  /** The instance under test; its clock is `clock`. */
  coord: Coord
  /** A second instance sharing the same backend (another process, for Redis). */
  peer: Coord
  clock: ManualClock
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
let n = 0
/** A key no other case uses, so cases stay independent on a shared backend. */
const fresh = (name: string) => `${name}:${process.pid}:${Date.now()}:${++n}`

/**
 * Waits until `cond` holds, both on the injected clock (MemoryCoord expiry) and in real
 * time (Redis PX expiry): advance the clock past the TTL, then poll briefly.
 */
async function expire(f: CoordFixture, ms: number, cond: () => Promise<boolean>): Promise<boolean> {
  f.clock.advance(ms + 1)
  for (let i = 0; i < 40; i++) {
    if (await cond()) return true
    await sleep(25)
  }
  return false
}

export function coordConformance(t: Test, setup: () => Promise<CoordFixture>): void {
  let f: CoordFixture
  t.before(async () => {
    f = await setup()
  })

  t.test('take counts within a fixed window and refuses past the limit', async (t) => {
    // Start at a window boundary so the window cannot roll over mid-test.
    f.clock.set(Math.ceil(Date.now() / 60_000) * 60_000 + 60_000)
    const k = fresh('take')
    const seen = []
    for (let i = 0; i < 4; i++) seen.push(await f.coord.take(k, 3, 60_000))
    t.same(
      seen.map((r) => [r.ok, r.count]),
      [
        [true, 1],
        [true, 2],
        [true, 3],
        [false, 3],
      ],
      'the 4th take of limit 3 is refused and the count stays',
    )
    t.equal(seen[3]!.resetMs, 60_000, 'resetMs is the time left in the window')
    f.clock.advance(15_000)
    const later = await f.coord.take(k, 3, 60_000)
    t.equal(later.ok, false)
    t.equal(later.resetMs, 45_000)

    const peer = await f.peer.take(k, 3, 60_000)
    t.equal(peer.ok, false, 'a peer sees the same window')

    f.clock.advance(45_000)
    const next = await f.coord.take(k, 3, 60_000)
    t.same([next.ok, next.count, next.resetMs], [true, 1, 60_000], 'a new window starts at 0')

    const big = fresh('take-by')
    t.same((await f.coord.take(big, 10, 60_000, 7)).count, 7, 'take by n')
    const over = await f.coord.take(big, 10, 60_000, 4)
    t.same([over.ok, over.count], [false, 7], 'a take that would pass the limit takes nothing')
    t.same((await f.coord.take(big, 10, 60_000, 3)).count, 10, 'exactly at the limit is allowed')
  })

  t.test('giveBack returns what a take took, never below zero', async (t) => {
    f.clock.set(Math.ceil(Date.now() / 60_000) * 60_000 + 120_000)
    const k = fresh('give')
    await f.coord.take(k, 2, 60_000)
    await f.coord.take(k, 2, 60_000)
    t.equal((await f.coord.take(k, 2, 60_000)).ok, false)
    await f.coord.giveBack(k, 1)
    const r = await f.coord.take(k, 2, 60_000)
    t.same([r.ok, r.count], [true, 2], 'one given back, one more admitted')
    await f.coord.giveBack(k, 10)
    t.same((await f.coord.take(k, 2, 60_000)).count, 1, 'giving back more than taken stops at 0')
    await f.coord.giveBack(fresh('never-taken'), 1)
    t.pass('giving back an unknown key is a no-op')
  })

  t.test(
    'nextId is unique, increasing, and starts above the floor of an unknown sequence',
    async (t) => {
      const s = fresh('seq')
      let asked = 0
      const floor = (n: number) => async () => (asked++, n)
      t.equal(await f.coord.nextId(s, floor(10)), 11, 'an unknown sequence starts above the floor')
      t.equal(await f.coord.nextId(s, floor(0)), 12)
      t.equal(await f.coord.nextId(s, floor(5)), 13, 'a known sequence does not ask again')
      t.equal(asked, 1)
      const many = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 ? f.coord : f.peer).nextId(s, floor(0))),
      )
      if (f.coord.kind === 'redis') {
        t.equal(new Set(many).size, 50, 'concurrent ids from two instances never repeat')
        t.ok(Math.min(...many) > 12)
      } else t.equal(new Set(many).size, 50, 'concurrent ids never repeat')
    },
  )

  t.test('nextIds reserves a range in one step, never overlapping other ids', async (t) => {
    const s = fresh('seqr')
    t.equal(
      await f.coord.nextIds(s, 5, async () => 100),
      101,
      'an unknown sequence starts above the floor',
    )
    t.equal(await f.coord.nextId(s, async () => 0), 106, 'single ids continue after the range')
    const ranges = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? f.coord : f.peer).nextIds(s, 10, async () => 0),
      ),
    )
    const ids = ranges.flatMap((first) => Array.from({ length: 10 }, (_, k) => first + k))
    t.equal(new Set(ids).size, 200, 'concurrent ranges never overlap')
    t.ok(Math.min(...ids) > 106)
  })

  t.test('leaseMany / releaseMany: numbered leases read with their companion values', async (t) => {
    const space = { lease: fresh('lm') + ':', value: fresh('lm-v') + ':' }
    t.same(
      (await f.coord.leaseMany(space, [1, 22], 'x', 500)).values,
      ['', ''],
      'both taken, companions unset',
    )
    t.same((await f.peer.leaseMany(space, [1], 'y', 500)).values, [null], 'held by x: refused to y')
    t.same(
      (await f.coord.leaseMany(space, [22], 'x', 500)).values,
      ['x'],
      'x renews its own, marked taken',
    )
    await f.coord.releaseMany(space, [1], '7', 'x')
    await f.coord.releaseMany(space, [22], null, 'x')
    t.same(
      (await f.coord.leaseMany(space, [1], 'x', 500)).values,
      [null],
      'y asked first: 1 is kept for y',
    )
    t.same(
      (await f.peer.leaseMany(space, [1, 22, 333], 'y', 500)).values,
      ['7', 'x', ''],
      'released: 1 with its value, 22 left as its taking marked it',
    )
    await f.coord.releaseMany(space, [1], '9', 'x')
    await f.peer.releaseMany(space, [1], null, 'y')
    t.same(
      (await f.coord.leaseMany(space, [1], 'x', 500)).values,
      ['x'],
      "a release by a non-holder wrote nothing (y's mark is there)",
    )
    const gone = { lease: fresh('lm-gone') + ':', value: fresh('lm-gone-v') + ':' }
    await f.coord.leaseMany(gone, [1], 'x', 500)
    await f.coord.releaseMany(gone, [1], '5', 'x')
    t.same(
      (await f.coord.leaseMany(gone, [1], 'x', 150)).values,
      ['5'],
      'taken again: its last value',
    )
    let after: (string | null)[] = []
    await expire(
      f,
      150,
      async () => (after = (await f.peer.leaseMany(gone, [1], 'y', 150)).values)[0] !== null,
    )
    t.same(after, ['x'], 'its holder gone without a release: the mark, not the value from before')
    t.equal(
      await f.coord.lease(`${space.lease}333`, 'x', 500),
      false,
      'one of them, as a single lease: y holds it',
    )
    t.same(
      (
        await f.coord.leaseMany(
          space,
          Array.from({ length: 1000 }, (_, i) => 10_000 + i),
          'x',
          500,
        )
      ).values,
      Array.from({ length: 1000 }, () => ''),
      'a thousand in one call',
    )
    // More ids than one MGET/MSET/DEL of the scripts takes (1,000): every chunk counts.
    const many = Array.from({ length: 2_500 }, (_, i) => 20_000 + i)
    const takeAll = async (owner: string, each: string | null, what: string) =>
      t.same(
        (await f.coord.leaseMany(space, many, owner, 500)).values,
        many.map(() => each),
        what,
      )
    await f.coord.releaseMany(space, many, 'never held', 'x')
    await takeAll('x', '', 'two and a half thousand taken')
    await takeAll('y', null, 'all refused to another')
    await f.coord.releaseMany(space, many, 'v', 'x')
    await takeAll('y', 'v', 'released with their value, every one (y was refused first)')
    await takeAll('y', 'x', 'renewed by y: the mark its taking left')
    await f.coord.releaseMany(space, many, null, 'y')
    await takeAll('x', 'x', 'released without a value: the mark stays')
  })

  t.test('a lease space with a clock: read by leaseMany, raised by releaseMany', async (t) => {
    const space = { lease: fresh('lc') + ':', value: fresh('lc-v') + ':', clock: fresh('lc-c') }
    const first = await f.coord.leaseMany(space, [1], 'x', 500)
    t.ok(first.clock && first.clock.epoch.length > 0, 'a new clock starts in an epoch of its own')
    t.equal(first.clock!.max, 0, 'at 0')
    await f.coord.releaseMany(space, [1], 'a', 'x', 1_700_000_000_000_123)
    const second = await f.peer.leaseMany(space, [1], 'y', 500)
    t.same(second.clock, { epoch: first.clock!.epoch, max: 1_700_000_000_000_123 }, 'raised')
    await f.peer.releaseMany(space, [1], 'b', 'y', 5)
    const third = await f.coord.leaseMany(space, [1], 'x', 500)
    t.equal(third.clock!.max, 1_700_000_000_000_123, 'never lowered')
    t.same(third.values, ['b'])
    const plain = { lease: fresh('lp') + ':', value: fresh('lp-v') + ':' }
    t.equal((await f.coord.leaseMany(plain, [1], 'x', 500)).clock, null, 'a space without one')
  })

  t.test('a lease space with notes: left by releaseMany, read by the next taker', async (t) => {
    const space = {
      lease: fresh('ln') + ':',
      value: fresh('ln-v') + ':',
      note: fresh('ln-n') + ':',
    }
    const first = await f.coord.leaseMany(space, [1, 2, 3], 'x', 500)
    t.same(first.notes, [null, null, null], 'none yet')
    await f.coord.releaseMany(space, [1, 2, 3], 's1', 'x', undefined, ['a\nb', null, ''])
    const second = await f.peer.leaseMany(space, [1, 2, 3], 'y', 500)
    t.same(second.values, ['s1', 's1', 's1'], 'the values apart from the notes')
    t.same(second.notes, ['a\nb', null, null], 'a note per id where one was left')
    t.same((await f.peer.leaseMany(space, [1], 'y', 500)).notes, [null], 'a renewal reads none')
    await f.peer.releaseMany(space, [1], null, 'y', undefined, ['c'])
    t.same(
      (await f.coord.leaseMany(space, [1], 'x', 500)).notes,
      ['a\nb'],
      'none left beside no value: the one before stays',
    )
    await f.peer.releaseMany(space, [1], 's2', 'y', undefined, ['d'])
    t.same(
      (await f.coord.leaseMany(space, [1], 'x', 500)).values,
      ['x'],
      'a non-holder leaves nothing',
    )
    const plain = { lease: fresh('lnp') + ':', value: fresh('lnp-v') + ':' }
    t.equal((await f.coord.leaseMany(plain, [1], 'x', 500)).notes, undefined, 'a space without')
  })

  t.test('a lease space with want channels: a refusal is told to the holder', async (t) => {
    const space = {
      lease: fresh('lw') + ':',
      value: fresh('lw-v') + ':',
      want: fresh('lw-w') + ':',
    }
    const heard: string[] = []
    const other: string[] = []
    await f.coord.subscribe(`${space.want}x`, (m) => heard.push(m))
    await f.coord.subscribe(`${space.want}y`, (m) => other.push(m))
    await f.coord.leaseMany(space, [1, 2], 'x', 500)
    await f.coord.leaseMany(space, [3], 'z', 500)
    t.same(
      (await f.peer.leaseMany(space, [1, 4, 2, 3], 'y', 500)).values,
      [null, '', null, null],
      'held ones refused',
    )
    for (let i = 0; i < 100 && heard.length < 1; i++) await sleep(10)
    t.same(heard, ['1,2'], "x hears the ids it holds that y was refused, in y's order")
    await f.coord.leaseMany(space, [1], 'x', 500)
    await f.peer.releaseMany(space, [4], 'v', 'y')
    await sleep(50)
    t.same(heard, ['1,2'], 'a renewal or a release tells nobody')
    t.same(other, [], 'nor the owner refused')
    await f.peer.leaseMany(space, [2], 'y', 500)
    for (let i = 0; i < 100 && heard.length < 2; i++) await sleep(10)
    t.same(heard, ['1,2', '2'], 'told again at every refusal')
    const plain = { lease: fresh('lwp') + ':', value: fresh('lwp-v') + ':' }
    await f.coord.subscribe('x', (m) => other.push(m))
    await f.coord.leaseMany(plain, [1], 'x', 500)
    await f.peer.leaseMany(plain, [1], 'y', 500)
    await sleep(50)
    t.same(other, [], 'a space without want channels tells nobody')
  })

  t.test("a lease space with heartbeats: a lapsed holder's leases are free", async (t) => {
    const space = {
      lease: fresh('la') + ':',
      value: fresh('la-v') + ':',
      alive: fresh('la-a') + ':',
    }
    const [x, y] = [`${HEARTBEAT_MARK}x`, `${HEARTBEAT_MARK}y`]
    t.equal(await f.coord.heartbeat(space, x, 150), false, 'no heartbeat before the first')
    t.same((await f.coord.leaseMany(space, [1, 2], x, 150)).values, ['', ''], 'x takes two')
    t.equal(await f.coord.heartbeat(space, x, 150), true, 'its call set its heartbeat')
    for (let i = 0; i < 4; i++) {
      f.clock.advance(60)
      await sleep(60)
      await f.coord.heartbeat(space, x, 150)
    }
    t.same(
      (await f.peer.leaseMany(space, [1, 2], y, 150)).values,
      [null, null],
      'past their ttl, kept by the heartbeat alone',
    )
    let taken: (string | null)[] = []
    const lapsed = await expire(
      f,
      150,
      async () => (taken = (await f.peer.leaseMany(space, [1], y, 150)).values)[0] !== null,
    )
    t.ok(lapsed, "x's heartbeat lapsed: y takes its lease")
    t.same(taken, ['x'], 'with the mark x took it with (x never released it)')
    t.equal(await f.coord.heartbeat(space, x, 150), false, 'x learns that it had lapsed')
    t.same((await f.coord.leaseMany(space, [1], x, 150)).values, [null], 'and y holds it now')
    // An older release's holder (no heartbeat mark, a space without `alive`): its ttl only.
    const older = { lease: space.lease, value: space.value }
    t.same((await f.coord.leaseMany(older, [3], 'plain', 5_000)).values, [''], 'taken')
    t.same(
      (await f.peer.leaseMany(space, [3], y, 150)).values,
      [null],
      'an owner without the mark keeps its lease without a heartbeat',
    )
  })

  t.test('a lease is exclusive, renewable by its holder, released, and expires', async (t) => {
    const l = fresh('lease')
    t.equal(await f.coord.lease(l, 'a', 150), true, 'a acquires')
    t.equal(await f.peer.lease(l, 'b', 150), false, 'b is refused while a holds it')
    t.equal(await f.coord.lease(l, 'a', 150), true, 'a renews')
    await f.peer.release(l, 'b')
    t.equal(await f.peer.lease(l, 'b', 150), false, 'a release by a non-holder does nothing')
    await f.coord.release(l, 'a')
    t.equal(await f.peer.lease(l, 'b', 150), true, 'after release b acquires')
    const expired = await expire(f, 150, async () => f.coord.lease(l, 'a', 150))
    t.equal(expired, true, 'after the ttl the lease is free again')
    t.equal(await f.peer.lease(l, 'b', 150), false, 'and a holds it now')
  })

  t.test('claim sets a key only when absent; unclaim and expiry free it', async (t) => {
    const [a, b] = [fresh('claim'), fresh('claim')]
    t.equal(await f.coord.claim(a, 60_000), true)
    t.equal(await f.coord.claim(a, 60_000), false, 'a second claim of the same key fails')
    t.equal(await f.peer.claim(a, 60_000), false, 'also from a peer')
    t.equal(await f.coord.claim(b, 60_000), true)
    await f.coord.unclaim([a, b])
    await f.coord.unclaim([])
    t.equal(await f.peer.claim(a, 60_000), true, 'an unclaimed key is free')
    t.equal(await f.peer.claim(b, 60_000), true, 'and so is the other')

    const short = fresh('claim-ttl')
    t.equal(await f.coord.claim(short, 150), true)
    t.equal(await expire(f, 150, () => f.coord.claim(short, 150)), true, 'a claim expires')
  })

  t.test('claimValues sets keys holding no live value and says what the others hold', async (t) => {
    const [a, b, c] = [fresh('claimv'), fresh('claimv'), fresh('claimv')]
    t.same(
      await f.coord.claimValues([a, b, a], [1, 2, 3], 60_000),
      [null, null, 1],
      'per key; a key named twice sees the first value',
    )
    t.same(
      await f.peer.claimValues([b, c], [4, 1_764_288_000_123], 60_000),
      [2, null],
      'a peer sees the value held, and sets the key nobody held',
    )
    t.same(
      await f.coord.claimValues([c], [6], 60_000),
      [1_764_288_000_123],
      'the value is not replaced (a time in ms, exactly)',
    )
    t.same(await f.coord.claimValues([], [], 60_000), [], 'an empty claim is empty')

    const short = fresh('claimv-ttl')
    t.same(await f.coord.claimValues([short], [7], 150), [null])
    t.equal(
      await expire(f, 150, async () => (await f.coord.claimValues([short], [8], 150))[0] === null),
      true,
      'a claimed value expires',
    )
    t.same(await f.peer.claimValues([short], [9], 150), [8], 'and the new one holds')
  })

  t.test('releaseValues drops a claim that still holds the value given, no other', async (t) => {
    const [a, b, c] = [fresh('relv'), fresh('relv'), fresh('relv')]
    t.same(await f.coord.claimValues([a, b], [1_764_288_000_123, 2], 60_000), [null, null])
    await f.peer.releaseValues([a, b, c], [1_764_288_000_123, 5, 6])
    t.same(
      await f.peer.claimValues([a, b, c], [10, 11, 12], 60_000),
      [null, 2, null],
      'the released key is claimed anew; one holding another value stays; an absent one is set',
    )
    t.same(await f.coord.claimValues([a], [13], 60_000), [10], 'the new claim holds')
    await f.coord.releaseValues([], [])
    t.pass('releasing nothing is fine')
  })

  t.test('get and set, with and without ttl', async (t) => {
    const k = fresh('kv')
    t.equal(await f.coord.get(k), null)
    await f.coord.set(k, 'v1')
    t.equal(await f.peer.get(k), 'v1')
    await f.coord.set(k, 'v2', 150)
    t.equal(await f.coord.get(k), 'v2')
    t.equal(await expire(f, 150, async () => (await f.coord.get(k)) === null), true, 'expired')
  })

  t.test('publish reaches subscribers, also on another instance', async (t) => {
    const ch = fresh('chan')
    const got: string[] = []
    const gotPeer: string[] = []
    await f.coord.subscribe(ch, (m) => got.push(m))
    await f.peer.subscribe(ch, (m) => gotPeer.push(m))
    await f.coord.publish(ch, 'hello')
    await f.peer.publish(ch, 'world')
    for (let i = 0; i < 100 && (got.length < 2 || gotPeer.length < 2); i++) await sleep(10)
    t.same(got.sort(), ['hello', 'world'])
    t.same(gotPeer.sort(), ['hello', 'world'])
    await f.coord.publish(fresh('nobody'), 'x')
    t.pass('publishing to a channel without subscribers is fine')
  })

  t.test('ping succeeds while the backend is up', async (t) => {
    await f.coord.ping()
    t.pass()
  })
}
