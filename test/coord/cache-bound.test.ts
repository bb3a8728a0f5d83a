// Caches of meters, profiles and event subscriptions are dropped by pub/sub messages, and
// bounded besides: a message missed across a reconnect leaves an entry stale for at most
// CACHE_CHECK_MS. Two instances on one real redis-server: the app, and a second instance's
// MeterRepo with its own Redis connection over the same store. The app's subscriber
// connection is killed (CLIENT KILL TYPE pubsub) right before the other instance removes a
// meter, so the invalidation message is lost.
import { Redis } from 'ioredis'
import t from 'tap'
import { CACHE_CHECK_MS } from '../../src/coord/generations.js'
import { RedisCoord } from '../../src/coord/redis.js'
import { newMeter } from '../../src/store/meter-row.js'
import { MeterRepo } from '../../src/store/meters.js'
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
  const admin = new Redis(redis.url)
  t.teardown(async () => {
    await s.close()
    await coordB.close()
    admin.disconnect()
    await redis.stop()
  })
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

  t.test('a meter created on another instance: found without reloading the index', async (t) => {
    const { workspaceId: ws } = await s.tenant()
    const before = s.app.parts.meters.wholeLoads
    t.equal(await s.app.parts.meters.byIdentifier(ws, 'n1'), null, 'loaded, without n1')
    const b = new MeterRepo(s.app.parts.store, coordB)
    await b.createMany(ws, [newMeter('n1'), newMeter('n2')])
    let found = null
    for (let i = 0; i < 100 && !found; i++) {
      found = await s.app.parts.meters.byIdentifier(ws, 'n2')
      if (!found) await sleep(10)
    }
    t.ok(found, 'the message over Redis named it')
    await sleep(CACHE_CHECK_MS + 100)
    t.ok(await s.app.parts.meters.byIdentifier(ws, 'n1'))
    t.equal(s.app.parts.meters.wholeLoads - before, 1, 'one load, before the creation')
  })

  t.test('a removed meter stops accepting readings although the message was lost', async (t) => {
    const { workspaceId: ws, token } = await s.tenant()
    const made = await s.app.parts.meters.create(
      ws,
      newMeter('m1', { unit: 'kwh', profile_needs_review: false }),
    )
    t.ok('meter' in made)
    const report = (min: number) =>
      s.call('POST', '/api/v1/reportData', {
        token,
        body: {
          readings: [
            {
              meter: 'm1',
              kind: 'saldo',
              value: min,
              unit: 'kwh',
              recorded_at: new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString(),
            },
          ],
        },
      })
    t.equal((await report(1)).body.results[0].status, 'created', 'cached on the app')

    // Instance B removes the meter while the app's subscriber is disconnected.
    const b = new MeterRepo(s.app.parts.store, coordB)
    const m = (await b.byIdentifier(ws, 'm1'))!
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
    await b.save({ ...m, lifecycle_state: 'removed' })
    await sleep(CACHE_CHECK_MS + 300)

    const r = await report(2)
    t.equal(r.body.results[0].status, 'rejected_meter_retired', 'refused within the bound')
  })
}
