// The per-meter leases live by their holder's heartbeat: a turn longer than the TTL still
// keeps another instance out of that meter, a dead holder's meters are free once it
// lapses. Two lock holders with their own Redis connections on one real redis-server stand
// in for two instances.
import t, { type Test } from 'tap'
import { RedisCoord } from '../../src/coord/redis.js'
import { CoordMeterLocks } from '../../src/actors/meter-locks.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'

if (!redisAvailable()) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis()
  const coords = [
    new RedisCoord(redis.url, 'mf:lease-test:'),
    new RedisCoord(redis.url, 'mf:lease-test:'),
  ]
  for (const c of coords) await c.connect()
  t.teardown(async () => {
    for (const c of coords) await c.close()
    await redis.stop()
  })
  // A 150 ms lease; A's turn takes 1 s. An idle lease is kept 200 ms.
  const a = new CoordMeterLocks(coords[0]!, { ttlMs: 150, waitMs: 10_000, keepMs: 200 })
  const b = new CoordMeterLocks(coords[1]!, { ttlMs: 150, waitMs: 10_000, keepMs: 200 })
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

  t.test('a turn longer than the TTL keeps the meter to itself', async (t) => {
    const spans: Record<string, { from: number; to: number }> = {}
    const turn = (who: string, ms: number) => async () => {
      const from = Date.now()
      await sleep(ms)
      spans[who] = { from, to: Date.now() }
    }
    const turnA = a.withLocks([{ meterId: 42, seen: null }], turn('A', 1000))
    await sleep(50) // A holds the lease
    const turnB = b.withLocks([{ meterId: 42, seen: null }], turn('B', 10))
    const [[outA], [outB]] = await Promise.all([turnA, turnB])
    t.ok(spans.B!.from >= spans.A!.to, "B ran only after A's turn ended")
    t.ok(outA && 'seen' in outA && outB && 'seen' in outB, 'both turns ended')
    t.not((outA as { seen: string }).seen, (outB as { seen: string }).seen, 'each left a stamp')
  })

  t.test(
    'a long turn over thousands of meters keeps every one of them (one heartbeat)',
    async (t) => {
      const ids = Array.from({ length: 2_500 }, (_, i) => 10_000 + i)
      let ended = 0
      const turnA = a.withLocks(
        ids.map((meterId) => ({ meterId, seen: null })),
        async () => {
          await sleep(600)
          ended = Date.now()
        },
      )
      await sleep(300) // past two TTLs: only the heartbeat kept the leases
      let ranAt = 0
      const [outB] = await b.withLocks([{ meterId: ids.at(-1)!, seen: null }], async () => {
        ranAt = Date.now()
      })
      const outA = await turnA
      t.ok(ranAt >= ended, "B's turn on the last meter ran only after A's turn ended")
      t.ok(outB && 'seen' in outB, 'and ended')
      t.ok(
        outA.every((o) => 'seen' in o),
        'every meter of the long turn ended',
      )
    },
  )

  t.test('the meters of a batch run together; one held elsewhere runs once free', async (t) => {
    const rounds: number[][] = []
    const holdB = b.withLocks([{ meterId: 7, seen: null }], () => sleep(300))
    await sleep(50)
    const entries = [5, 6, 7, 8].map((meterId) => ({ meterId, seen: null }))
    const out = await a.withLocks(entries, async (locked) => {
      rounds.push(locked.map((l) => entries[l.index]!.meterId))
    })
    await holdB
    t.same(rounds, [[5, 6, 8], [7]], 'one call for the three free meters, then meter 7')
    t.ok(
      out.every((o) => 'seen' in o),
      'every turn ended',
    )
    const [again] = await a.withLocks(
      [{ meterId: 5, seen: (out[0] as { seen: string }).seen }],
      async (l) => {
        t.same(
          l.map((x) => [x.changed, x.untouched]),
          [[false, false]],
          'its own stamp: unchanged',
        )
      },
    )
    t.ok(again && 'seen' in again)
  })

  t.test('a meter held past the wait fails alone; a throw marks the meter changed', async (t) => {
    const quick = new CoordMeterLocks(coords[0]!, { ttlMs: 150, waitMs: 100 })
    const holdB = b.withLocks([{ meterId: 9, seen: null }], () => sleep(400))
    await sleep(50)
    const out = await quick.withLocks(
      [
        { meterId: 9, seen: null },
        { meterId: 10, seen: null },
      ],
      async () => {},
    )
    await holdB
    t.match(out[0], { error: { status: 503 } }, 'meter 9: busy on another instance')
    t.ok('seen' in out[1]!, 'meter 10 ran')
    const seen10 = (out[1] as { seen: string }).seen
    const failed = await a.withLocks([{ meterId: 10, seen: seen10 }], async () => {
      throw new Error('boom')
    })
    t.match(failed[0], { error: { message: 'boom' } })
    await a.withLocks([{ meterId: 10, seen: seen10 }], async (l) => {
      // it may have written before it failed (an INSERT that timed out, say): read again
      t.equal(l[0]!.changed, true, 'the failed turn left the meter marked changed')
    })
  })

  const seenOf = (o: unknown) => (o as { seen: string }).seen
  /**
   * Two turns of `meterId` on `c`, `gapMs` apart, the second at the stamp the first left (so
   * the lease is kept as a meter that stays here); the second turn's outcome.
   */
  const twoTurns = async (c: CoordMeterLocks, meterId: number, gapMs: number) => {
    const [o0] = await c.withLocks([{ meterId, seen: null }], async () => {})
    await sleep(gapMs)
    const [o1] = await c.withLocks([{ meterId, seen: seenOf(o0) }], async () => {})
    return o1
  }
  /** `who` takes the meter, asserting that no write came since `seen`; the wait in ms. */
  const unchangedFor = async (
    t: Test,
    who: CoordMeterLocks,
    meterId: number,
    seen: string,
    msg: string,
  ) => {
    const from = Date.now()
    await who.withLocks([{ meterId, seen }], async (l) => {
      t.same(
        l.map((x) => x.changed),
        [false],
        msg,
      )
    })
    return Date.now() - from
  }

  t.test(
    'the next turn of a meter here takes its lease over; it goes back after the linger',
    async (t) => {
      // a real coordinator of its own, its lease calls counted (the other holders' renewals
      // on coords[0], every 50 ms while they hold leases, were counted too: a flake in CI)
      const coord = new RedisCoord(redis.url, 'mf:lease-test:')
      await coord.connect()
      t.teardown(() => coord.close())
      const leaseMany = coord.leaseMany.bind(coord)
      let calls = 0
      coord.leaseMany = (...args) => (calls++, leaseMany(...args))
      const c = new CoordMeterLocks(coord, {
        ttlMs: 30_000,
        waitMs: 10_000,
        lingerMs: 50,
        maxHoldMs: 1_000,
      })
      const [o1] = await c.withLocks([{ meterId: 300, seen: null }], async () => {})
      const [o2] = await c.withLocks([{ meterId: 300, seen: seenOf(o1) }], async (l) => {
        t.same(
          l.map((x) => x.changed),
          [false],
          'its own last turn: unchanged',
        )
      })
      t.equal(calls, 1, 'one lease call for both turns')
      t.not(seenOf(o2), seenOf(o1), 'each turn left a stamp')
      const ms = await unchangedFor(
        t,
        b,
        300,
        seenOf(o2),
        'another instance finds the stamp of the last turn written',
      )
      t.ok(ms < 1_000, 'and waited only for the linger')
    },
  )

  t.test(
    'a failed turn on a lease taken over gives it back at once, the meter marked changed',
    async (t) => {
      const c = new CoordMeterLocks(coords[0]!, {
        ttlMs: 30_000,
        waitMs: 10_000,
        lingerMs: 10_000,
        maxHoldMs: 60_000,
      })
      const [o1] = await c.withLocks([{ meterId: 303, seen: null }], async () => {})
      const [failed] = await c.withLocks([{ meterId: 303, seen: seenOf(o1) }], async () => {
        throw new Error('boom')
      })
      t.match(failed, { error: { message: 'boom' } })
      const from = Date.now()
      await b.withLocks([{ meterId: 303, seen: seenOf(o1) }], async (l) => {
        // it may have written some of its rows: the first turn's stamp is not written
        t.equal(l[0]!.changed, true, 'another instance reads the meter again')
      })
      t.ok(Date.now() - from < 1_000, 'given back at once, not after the linger')
    },
  )

  t.test(
    'a meter kept by turn after turn here is still free for another instance in time',
    async (t) => {
      const c = new CoordMeterLocks(coords[0]!, {
        ttlMs: 30_000,
        waitMs: 10_000,
        lingerMs: 50,
        maxHoldMs: 100,
      })
      let seen: string | null = null
      let stop = false
      const busyUntil = Date.now() + 1_500
      const busy = (async () => {
        while (!stop && Date.now() < busyUntil) {
          const [o] = await c.withLocks([{ meterId: 301, seen }], () => sleep(5))
          seen = 'seen' in o! ? o.seen : null
        }
      })()
      await sleep(30)
      const [got] = await b.withLocks([{ meterId: 301, seen: null }], async () => {})
      const at = Date.now()
      stop = true
      await busy
      t.ok('seen' in got!, 'the other instance ran its turn')
      t.ok(
        at < busyUntil - 500,
        `it did not wait for the busy instance to stop (${busyUntil - at} ms left)`,
      )
    },
  )

  t.test(
    'a meter written elsewhere: its rows since are above the version the turn is told; a clock behind moves past',
    async (t) => {
      // an instance whose wall clock is an hour behind
      let last = 0
      const behind = {
        version: () => (last = Math.max(Date.now() * 1000 - 3_600_000_000, last + 1)),
        observeVersion: (v: number) => void (last = Math.max(last, v)),
      }
      const version = (o: unknown) => Number(seenOf(o).split('@')[0])
      const ahead = new CoordMeterLocks(coords[0]!)
      const slow = new CoordMeterLocks(coords[1]!, { clock: behind })
      const [o1] = await ahead.withLocks([{ meterId: 400, seen: null }], async () => {})
      const [o2] = await slow.withLocks([{ meterId: 400, seen: null }], async (l) => {
        t.equal(l[0]!.since, null, 'an actor that saw no stamp reloads')
        t.ok(behind.version() > version(o1), 'versions issued under the lease come after its stamp')
      })
      t.ok(version(o2) > version(o1), 'and so does the stamp written')
      const [o3] = await ahead.withLocks([{ meterId: 400, seen: seenOf(o1) }], async (l) => {
        t.same(
          [l[0]!.changed, l[0]!.since],
          [true, version(o1)],
          'the first instance catches up from its own last stamp',
        )
      })
      await slow.withLocks([{ meterId: 400, seen: seenOf(o2) }], async () => {
        throw new Error('boom')
      })
      await ahead.withLocks([{ meterId: 400, seen: seenOf(o3) }], async (l) => {
        t.same([l[0]!.changed, l[0]!.since], [true, null], "after a failed turn's mark: a reload")
      })
      await Promise.all([ahead.close(), slow.close()])
    },
  )

  t.test(
    'a lease nobody else asked for is kept past the linger; asked for, it goes back at once',
    async (t) => {
      const c = new CoordMeterLocks(coords[0]!, {
        ttlMs: 30_000,
        waitMs: 10_000,
        lingerMs: 10,
        keepMs: 60_000,
      })
      t.teardown(() => c.close())
      // New to this actor (as if it came from elsewhere): it goes back after the linger.
      const o1 = await twoTurns(c, 304, 50)
      await sleep(100)
      t.equal(
        await coords[1]!.lease('meter:304', 'someone', 1000),
        false,
        'still held after 100 ms',
      )
      const from = Date.now()
      await b.withLocks([{ meterId: 304, seen: seenOf(o1) }], async (l) => {
        t.same(
          l.map((x) => x.changed),
          [false],
          'the other instance finds the stamp of the last turn written',
        )
      })
      t.ok(Date.now() - from < 1_000, 'told it was wanted, the holder gave it back at once')
    },
  )

  t.test('a kept lease goes back once its meter was idle for the keep time', async (t) => {
    const c = new CoordMeterLocks(coords[0]!, { ttlMs: 30_000, keepMs: 200 })
    t.teardown(() => c.close())
    const o1 = await twoTurns(c, 305, 50)
    await sleep(50)
    await c.withLocks([{ meterId: 305, seen: seenOf(o1) }], async () => {})
    await sleep(100)
    t.equal(await coords[1]!.lease('meter:305', 'someone', 1000), false, 'kept while in use')
    await sleep(400)
    t.equal(await coords[1]!.lease('meter:305', 'someone', 1000), true, 'given back when idle')
  })

  t.test('close gives back the lingering leases at once', async (t) => {
    const c = new CoordMeterLocks(coords[0]!, {
      ttlMs: 30_000,
      waitMs: 10_000,
      lingerMs: 60_000,
      maxHoldMs: 60_000,
    })
    await c.withLocks([{ meterId: 302, seen: null }], async () => {})
    await c.close()
    const from = Date.now()
    const [got] = await b.withLocks([{ meterId: 302, seen: null }], async () => {})
    t.ok('seen' in got!)
    t.ok(Date.now() - from < 1_000, 'free without waiting for the linger')
  })

  t.test("a dead instance's kept meters are taken once its heartbeat lapses", async (t) => {
    // An instance of its own, killed as kill -9 would: its connection gone, nothing given back.
    const coord = new RedisCoord(redis.url, 'mf:lease-test:')
    await coord.connect()
    const dead = new CoordMeterLocks(coord, { ttlMs: 150, keepMs: 60_000 })
    const ids = Array.from({ length: 100 }, (_, i) => 400 + i)
    // Taken twice, the second time at their own stamps: kept whatever the store held
    // before (a meter found with another holder's stamp goes back after the linger).
    const first = await dead.withLocks(
      ids.map((meterId) => ({ meterId, seen: null })),
      async () => {},
    )
    await sleep(50)
    await dead.withLocks(
      ids.map((meterId, i) => ({ meterId, seen: seenOf(first[i]) })),
      async () => {},
    )
    await sleep(400)
    t.equal(await coords[1]!.lease('meter:499', 'someone', 1000), false, 'kept past two TTLs')
    await coord.close()
    const from = Date.now()
    const out = await b.withLocks(
      ids.map((meterId) => ({ meterId, seen: null })),
      async (l) => {
        t.equal(l.length, ids.length, 'all taken in one round')
        t.ok(
          l.every((x) => x.changed),
          'each read again: the dead holder left no stamp',
        )
      },
    )
    t.ok(
      out.every((o) => 'seen' in o),
      'every turn ended',
    )
    const ms = Date.now() - from
    t.ok(ms < 1_000, `taken within the TTL of the heartbeat, not the keys' (${ms} ms)`)
  })

  t.test('a holder that finds its heartbeat lapsed gives its kept leases back', async (t) => {
    const c = new CoordMeterLocks(coords[0]!, { ttlMs: 150, keepMs: 60_000 })
    t.teardown(() => c.close())
    await twoTurns(c, 510, 50)
    await sleep(100)
    t.equal(await coords[1]!.lease('meter:510', 'someone', 1000), false, 'kept')
    // The event loop stalls past the heartbeat's TTL (a long GC, a blocked thread).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400)
    let free = false
    for (let i = 0; i < 40 && !free; i++) {
      await sleep(25)
      free = await coords[1]!.lease('meter:510', 'someone', 1000)
    }
    t.ok(free, 'given back once the next heartbeat found it had lapsed')
  })

  t.test(
    'after a stall past the heartbeat, a kept lease is asked of Redis again, not taken over',
    async (t) => {
      const c = new CoordMeterLocks(coords[0]!, { ttlMs: 150, keepMs: 60_000 })
      t.teardown(() => c.close())
      const o1 = await twoTurns(c, 520, 20)
      await sleep(20)
      const [o2] = await c.withLocks([{ meterId: 520, seen: seenOf(o1) }], async (l) => {
        t.equal(l[0]!.changed, false, 'kept: taken over at the stamp its last turn left')
      })
      // The event loop stalls past the heartbeat's TTL: another instance may have had the
      // meter meanwhile, and the next heartbeat's answer would come after this turn began.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400)
      await c.withLocks([{ meterId: 520, seen: seenOf(o2) }], async (l) => {
        t.equal(l[0]!.changed, true, 'asked of Redis: its stamp is the mark of a lease in use')
      })
    },
  )

  t.test(
    "a kept lease whose key's renewal finds another holder is never taken over again",
    async (t) => {
      const c = new CoordMeterLocks(coords[0]!, {
        ttlMs: 150,
        waitMs: 300,
        keepMs: 60_000,
        keyRenewMs: 1,
      })
      t.teardown(() => c.close())
      const o1 = await twoTurns(c, 530, 20)
      // Its key lapsed in Redis and another holder took it (an older release's lease, which
      // lives by its TTL alone): the next renewal (every heartbeat here) is refused.
      await coords[1]!.set('lease:meter:530', 'someone', 10_000)
      await sleep(200)
      let ran = false
      const [out] = await c.withLocks([{ meterId: 530, seen: seenOf(o1) }], async () => {
        ran = true
      })
      t.notOk(ran, 'the turn did not run while another holds the lease')
      t.ok(out && 'error' in out, 'it waited for the lease and gave up (503)')
    },
  )

  t.test('a kept lease whose key was not renewed within its trusted time goes back', async (t) => {
    // Beats every 200 ms; a key trusted 50 ms after its renewal: the first beat finds it
    // overdue, as renewals that kept failing for 9 of the key's 10 minutes would.
    const c = new CoordMeterLocks(coords[0]!, {
      ttlMs: 600,
      keepMs: 60_000,
      keyRenewMs: 1,
      keyTrustedMs: 50,
    })
    t.teardown(() => c.close())
    const o1 = await twoTurns(c, 540, 10)
    await c.withLocks([{ meterId: 540, seen: seenOf(o1) }], async (l) => {
      t.equal(l[0]!.changed, false, 'before the beat: taken over at its last stamp')
    })
    t.equal(await coords[1]!.lease('meter:540', 'someone', 1000), false, 'kept')
    await sleep(300)
    t.ok(await coords[1]!.lease('meter:540', 'someone', 1000), 'given back after the beat')
  })

  t.test('past the most leases held, the longest held idle ones go back', async (t) => {
    const c = new CoordMeterLocks(coords[0]!, { ttlMs: 30_000, keepMs: 60_000, maxHeld: 100 })
    t.teardown(() => c.close())
    const ids = Array.from({ length: 300 }, (_, i) => 600 + i)
    for (let i = 0; i < ids.length; i += 50)
      await c.withLocks(
        ids.slice(i, i + 50).map((meterId) => ({ meterId, seen: null })),
        async () => {},
      )
    await sleep(100)
    const free: number[] = []
    for (const id of ids) if (await coords[1]!.lease(`meter:${id}`, 'someone', 1000)) free.push(id)
    t.ok(free.length >= 200, `at most the bound kept (${ids.length - free.length} kept)`)
    t.ok(
      free.every((id) => id < 600 + free.length + 10),
      'the first taken went back first',
    )
    t.equal(
      await coords[1]!.lease(`meter:${ids.at(-1)}`, 'someone', 1000),
      false,
      'the last taken is kept',
    )
  })

  t.test('the lease is given back once its meter was idle for the keep time', async (t) => {
    await sleep(300)
    t.ok(await coords[1]!.lease('meter:42', 'someone', 1000), 'free again')
  })
}
