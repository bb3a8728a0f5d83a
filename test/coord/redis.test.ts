// Coordination conformance over RedisCoord against a real redis-server started on a free
// port for this file; two RedisCoord instances stand in for two Meterflow processes. Also:
// Redis unreachable is an ApiError 503, and the coordinator recovers when Redis is back.
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { Redis } from 'ioredis'
import { RedisCoord } from '../../src/coord/redis.js'
import { ApiError } from '../../src/errors.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { coordConformance } from './conformance.js'

if (!redisAvailable({ own: true })) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis({ own: true })
  t.teardown(() => redis.stop())
  const clock = new ManualClock()
  const prefix = `mftest:${process.pid}:`
  const coord = new RedisCoord(redis.url, prefix, () => clock.now())
  const peer = new RedisCoord(redis.url, prefix, () => clock.now())
  await coord.connect()
  await peer.connect()
  t.teardown(async () => {
    await coord.close()
    await peer.close()
  })

  t.test('conformance', async (t) => {
    coordConformance(t, async () => ({ coord, peer, clock }))
  })

  t.test('prefixes keep two deployments on one Redis apart', async (t) => {
    const other = new RedisCoord(redis.url, `other:${process.pid}:`, () => clock.now())
    await other.connect()
    t.teardown(() => other.close())
    const k = `iso:${Date.now()}`
    t.equal(await coord.claim(k, 60_000), true)
    t.equal(await other.claim(k, 60_000), true, 'same key under another prefix is free')
  })

  t.test('evictionRisk names a policy that may evict keys with a TTL', async (t) => {
    const admin = new Redis(redis.url)
    t.teardown(async () => {
      await admin.config('SET', 'maxmemory', '0')
      await admin.config('SET', 'maxmemory-policy', 'noeviction')
      admin.disconnect()
    })
    t.equal(await coord.evictionRisk(), null, 'no maxmemory: nothing is evicted')
    await admin.config('SET', 'maxmemory-policy', 'volatile-lru')
    t.equal(await coord.evictionRisk(), null, 'a policy without maxmemory evicts nothing')
    await admin.config('SET', 'maxmemory', '1gb')
    t.equal(await coord.evictionRisk(), 'volatile-lru', 'maxmemory and volatile-lru')
    await admin.config('SET', 'maxmemory-policy', 'noeviction')
    t.equal(await coord.evictionRisk(), null, 'noeviction: writes fail instead, nothing lost')
  })

  t.test(
    'Redis unreachable is a 503 ApiError; the coordinator recovers when it is back',
    async (t) => {
      await redis.kill()
      const calls: [string, () => Promise<unknown>][] = [
        ['take', () => coord.take('down', 5, 60_000)],
        ['nextId', () => coord.nextId('down', async () => 0)],
        ['lease', () => coord.lease('down', 'a', 1000)],
        ['claimValues', () => coord.claimValues(['down:a', 'down:b'], [1, 2], 1000)],
        ['ping', () => coord.ping()],
      ]
      for (const [name, call] of calls) {
        const started = Date.now()
        const err = await call().then(
          () => null,
          (e: unknown) => e,
        )
        t.ok(err instanceof ApiError, `${name} rejects with an ApiError`)
        t.equal((err as ApiError).status, 503, `${name} is 503`)
        t.match((err as ApiError).message, /Redis/)
        t.ok(Date.now() - started < 3000, `${name} fails fast instead of queueing`)
      }

      await redis.start()
      let ok = false
      for (let i = 0; i < 100 && !ok; i++) {
        ok = await coord.ping().then(
          () => true,
          () => false,
        )
        if (!ok) await new Promise((r) => setTimeout(r, 100))
      }
      t.ok(ok, 'ping succeeds again after Redis restarted')
      const r = await coord.take(`after:${Date.now()}`, 5, 60_000)
      t.same([r.ok, r.count], [true, 1], 'rate limiting works again')
    },
  )
}
