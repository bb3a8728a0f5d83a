// Several instances sharing Redis: each attempt is sent by exactly one of them. A second
// delivery engine over the same store with its own Redis connection stands in for a second
// instance (one chDB per process).
import t from 'tap'
import { pino } from 'pino'
import { ManualClock } from '../../src/clock.js'
import { RedisCoord } from '../../src/coord/redis.js'
import { DeliveryEngine } from '../../src/events/engine.js'
import { Mailer } from '../../src/events/mailer.js'
import { redisAvailable, REDIS_SKIP_NOTICE, startRedis } from '../helpers/redis.js'
import { startTestServer } from '../helpers/server.js'
import { startReceiver } from './receiver.js'

if (!redisAvailable()) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis()
  const clock = new ManualClock(Date.parse('2030-01-02T03:04:05.000Z'))
  const s = await startTestServer(
    {
      REDIS_URL: redis.url,
      EVENT_RETRY_DELAYS_MS: '1000,2000,3000,4000',
    },
    { clock },
  )
  t.teardown(async () => {
    await s.close()
    await redis.stop()
  })
  const main = s.app.parts.events
  const { prefix } = s.app.parts.coord as RedisCoord
  const coord2 = new RedisCoord(redis.url, prefix, () => clock.now())
  await coord2.connect()
  const log = pino({ level: 'silent' })
  const other = new DeliveryEngine(
    main.repo,
    s.app.parts.tenants,
    new Mailer(main.repo, clock, log),
    coord2,
    clock,
    log,
    {
      retryDelaysMs: [1000, 2000, 3000, 4000],
      timeoutMs: 5000,
      disableAfter: 3,
      blockPrivate: false,
    },
  )
  t.teardown(() => coord2.close())

  t.test('two instances: each attempt is sent once', async (t) => {
    const rx = await startReceiver(500)
    t.teardown(() => rx.close())
    const { workspaceId: ws } = await s.tenant()
    await s.admin('POST', `/workspaces/${ws}/event-subscriptions`, { url: rx.url, events: ['*'] })
    other.start()
    t.teardown(() => other.stop())
    const idle = () => Promise.all([main.engine.idle(), other.idle()])
    for (let n = 0; n < 5; n++) await main.outbox.emit(ws, 'meter.created', { n })
    other.wake()
    await rx.waitFor(5)
    await idle()
    // Retry 1: both instances poll at once (their poll timers run on the clock). Retry 2:
    // both are driven by runDue at once.
    clock.advance(1000)
    await rx.waitFor(10)
    await idle()
    clock.advance(2000)
    await Promise.all([main.engine.runDue(), other.runDue()])
    await idle()
    clock.advance(1000) // one more poll of both engines: nothing is due any more
    await idle()
    t.equal(rx.received.length, 15, 'three attempts of five deliveries, none sent twice')
    const perDelivery = new Map<string, number>()
    for (const r of rx.received) {
      const id = String(r.headers['x-service-delivery'])
      perDelivery.set(id, (perDelivery.get(id) ?? 0) + 1)
    }
    t.same([...perDelivery.values()], [3, 3, 3, 3, 3])
  })
}
