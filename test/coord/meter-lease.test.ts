// The per-meter lease is renewed while a turn runs: a turn longer than the lease's TTL
// still keeps another instance out of that meter. Two lock holders with their own Redis
// connections on one real redis-server stand in for two instances.
import t from 'tap'
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
  // A 150 ms lease; A's turn takes 1 s.
  const a = new CoordMeterLocks(coords[0]!, 150, 10_000)
  const b = new CoordMeterLocks(coords[1]!, 150, 10_000)
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

  t.test('a turn longer than the TTL keeps the meter to itself', async (t) => {
    const spans: Record<string, { from: number; to: number }> = {}
    const turn = (who: string, ms: number) => async () => {
      const from = Date.now()
      await sleep(ms)
      spans[who] = { from, to: Date.now() }
    }
    const turnA = a.withLock(42, null, turn('A', 1000))
    await sleep(50) // A holds the lease
    const turnB = b.withLock(42, null, turn('B', 10))
    await Promise.all([turnA, turnB])
    t.ok(spans.B!.from >= spans.A!.to, "B ran only after A's turn ended")
  })

  t.test('the lease is given back after the turn', async (t) => {
    t.ok(await coords[1]!.lease('meter:42', 'someone', 1000), 'free again')
  })
}
