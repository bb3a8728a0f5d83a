// Rate limits and auth with Redis coordination (REDIS_URL): the same cases as the
// in-process run, against a real redis-server on a free port; plus Redis going away
// (503 {message}, never a 500 or a hang) and coming back.
import { Writable } from 'node:stream'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import t from 'tap'
import { startApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { ManualClock } from '../../src/clock.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { startTestServer } from '../helpers/server.js'
import { addProbeRoutes, freshMinute, makeToken, rateLimitCases } from '../http/rate-limit-cases.js'

if (!redisAvailable({ own: true })) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis({ own: true })
  const clock = new ManualClock()
  const s = await startTestServer({ REDIS_URL: redis.url }, { clock })
  t.teardown(async () => {
    await s.close()
    await redis.stop()
  })
  addProbeRoutes(s)
  t.equal(s.app.parts.coord.kind, 'redis', 'REDIS_URL set: Redis coordination')

  t.test('rate limits (Redis)', async (t) => rateLimitCases(t, () => s, clock))

  t.test('revocation applies at once with Redis coordination', async (t) => {
    freshMinute(clock)
    const { token, tokenId } = await makeToken(s)
    t.equal((await s.call('GET', '/api/v1/ping', { token })).status, 200)
    await s.admin('DELETE', `/tokens/${tokenId}`)
    t.equal((await s.call('GET', '/api/v1/ping', { token })).status, 401)
  })

  t.test('Redis unreachable: 503 {message}; recovers when Redis is back', async (t) => {
    freshMinute(clock)
    const { token } = await makeToken(s)
    t.equal((await s.call('GET', '/api/v1/ping', { token })).status, 200)
    await redis.kill()
    const started = Date.now()
    const down = await s.call('GET', '/api/v1/ping', { token })
    t.equal(down.status, 503, 'a request that needs the rate limiter is 503')
    t.same(Object.keys(down.body), ['message'])
    t.match(down.body.message, /Redis/)
    t.ok(Date.now() - started < 3000, 'answered at once, not queued')
    t.equal((await s.call('GET', '/healthz')).status, 200, 'healthz does not need Redis')

    await redis.start()
    let status = 0
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await s.call('GET', '/api/v1/ping', { token })).status
      if (status !== 200) await new Promise((r) => setTimeout(r, 100))
    }
    t.equal(status, 200, 'ping is 200 again once Redis is back')
  })

  t.test('a Redis that may evict keys with a TTL is named in a warning at start', async (t) => {
    const admin = new Redis(redis.url)
    await admin.config('SET', 'maxmemory', '1gb')
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru')
    const lines: { level: number; msg: string; maxmemoryPolicy?: string }[] = []
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l))
        cb()
      },
    })
    const app = await startApp(
      loadConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        // chDB opens one data directory per process: the other server's.
        DATA_DIR: s.dataDir,
        SCHEDULER: 'off',
        WORKERS: '1',
        REDIS_URL: redis.url,
      }),
      { logger: pino({ level: 'info' }, sink) },
    )
    await app.close()
    await admin.config('SET', 'maxmemory', '0')
    await admin.config('SET', 'maxmemory-policy', 'noeviction')
    admin.disconnect()
    const warn = lines.find((l) => l.maxmemoryPolicy)
    t.equal(warn?.maxmemoryPolicy, 'allkeys-lru', 'the policy is named')
    t.equal(warn?.level, 40, 'as a warning')
    t.match(warn?.msg, /noeviction/, 'with what to set instead')
  })
}
