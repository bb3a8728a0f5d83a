// Scheduler passes never overlap across instances: the manual run (POST
// /admin/v1/scheduler/run) takes the pass lease like the line does, and a long pass keeps
// renewing it. Two instances on one real redis-server: the app, and a second Scheduler with
// its own Redis connection over the same store (a second instance's line).
import { pino } from 'pino'
import t from 'tap'
import { systemClock } from '../../src/clock.js'
import { RedisCoord } from '../../src/coord/redis.js'
import { Scheduler } from '../../src/scheduler/scheduler.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { startTestServer } from '../helpers/server.js'

if (!redisAvailable()) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis()
  const s = await startTestServer({ REDIS_URL: redis.url })
  const prefix = (s.app.parts.coord as RedisCoord).prefix
  const coordB = new RedisCoord(redis.url, prefix)
  await coordB.connect()
  t.teardown(async () => {
    await s.close()
    await coordB.close()
    await redis.stop()
  })

  /** Intervals during which a probe task ran, per instance. */
  const spans: { who: string; from: number; to: number }[] = []
  const probe = (who: string, ms: number) => async () => {
    const from = Date.now()
    await new Promise((r) => setTimeout(r, ms))
    spans.push({ who, from, to: Date.now() })
    return {}
  }
  // Instance B: a pass lease of 150 ms, far shorter than its 1.2 s pass; only renewal
  // keeps it.
  const b = new Scheduler(
    s.app.parts.store.sql,
    coordB,
    systemClock,
    60,
    pino({ level: 'silent' }),
    {
      passLeaseMs: 150,
    },
  )
  b.addTask('probe', probe('B', 1200))
  s.app.parts.scheduler.addTask('probe', probe('A', 50))

  t.test("a manual run waits for the other instance's long pass", async (t) => {
    const passB = b.runOnce()
    await new Promise((r) => setTimeout(r, 100)) // B's pass is under way
    const manual = await s.call('POST', '/admin/v1/scheduler/run', { token: s.adminToken })
    await passB
    t.equal(manual.status, 200, 'the manual run ran')
    const [sb] = spans.filter((x) => x.who === 'B')
    const [sa] = spans.filter((x) => x.who === 'A')
    t.ok(sa && sb, 'both passes ran their tasks')
    t.ok(sa!.from >= sb!.to, 'the manual pass started only after the other pass ended')
    const runs = await s.app.parts.store.sql.query<{ n: string }>(
      'SELECT count() AS n FROM scheduler_runs',
    )
    t.equal(Number(runs[0]!.n), 2, 'two passes recorded')
  })

  t.test('the pass lease is free again after a pass', async (t) => {
    t.ok(await coordB.lease('scheduler:pass', 'probe', 1000), 'nobody holds it')
    await coordB.release('scheduler:pass', 'probe')
  })
}
