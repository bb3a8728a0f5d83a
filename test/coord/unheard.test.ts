// A meter lease nobody asked for is kept long only while its holder hears the refusals of
// others (`Coord.hears`): with the subscriber's connection down, or its SUBSCRIBE refused,
// a refusal's message is lost, and the lease goes back after the short keep time instead.
// A real redis-server of this file's own: the test kills its pubsub clients and takes
// SUBSCRIBE away from the default user (ACL), which a shared server's other files would feel.
import t from 'tap'
import { RedisCoord } from '../../src/coord/redis.js'
import { CoordMeterLocks } from '../../src/actors/meter-locks.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { Redis } from 'ioredis'

if (!redisAvailable({ own: true })) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis({ own: true })
  const admin = new Redis(redis.url)
  const coord = new RedisCoord(redis.url, 'mf:unheard:')
  const other = new RedisCoord(redis.url, 'mf:unheard:')
  await coord.connect()
  await other.connect()
  t.teardown(async () => {
    await coord.close()
    await other.close()
    admin.disconnect()
    await redis.stop()
  })
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
  const until = async (what: () => boolean, ms = 5_000) => {
    const end = Date.now() + ms
    while (!what() && Date.now() < end) await sleep(2)
    return what()
  }
  const seenOf = (o: unknown) => (o as { seen: string }).seen
  const deafen = async () => {
    await admin.call('ACL', 'SETUSER', 'default', '-subscribe')
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
  }
  const restore = () => admin.call('ACL', 'SETUSER', 'default', '+subscribe')

  t.test('hears: after the subscription is acknowledged, not while it is lost', async (t) => {
    t.equal(coord.hears(), false, 'nothing subscribed yet')
    const got: string[] = []
    await coord.subscribe('ch', (m) => got.push(m))
    t.ok(await until(() => coord.hears()), 'subscribed: hears')

    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
    t.ok(await until(() => !coord.hears(), 1_000), 'its connection killed: does not hear')
    t.ok(await until(() => coord.hears()), 'connected and subscribed again: hears')
    await other.publish('ch', 'after')
    t.ok(await until(() => got.length > 0, 1_000), 'a message published then arrives')
    t.same(got, ['after'])

    await deafen()
    await sleep(2_500) // more than a reconnection or two: each SUBSCRIBE refused
    t.equal(coord.hears(), false, 'SUBSCRIBE refused on every new connection: does not hear')
    await restore()
    t.ok(await until(() => coord.hears()), 'SUBSCRIBE allowed again: hears again')
    await other.publish('ch', 'back')
    t.ok(await until(() => got.length > 1, 1_000), 'and messages arrive again')
  })

  t.test(
    'a lease nobody asked for is kept while refusals are heard, and goes back after the short keep time while not',
    async (t) => {
      const c = new CoordMeterLocks(coord, { ttlMs: 30_000, keepMs: 60_000, unheardKeepMs: 200 })
      t.teardown(() => c.close())
      t.ok(await until(() => coord.hears()), 'hears')
      // Taken twice, the second time at its own stamp: kept as a meter that stays here.
      const keptFor = async (meterId: number) => {
        const [o] = await c.withLocks([{ meterId, seen: null }], async () => {})
        await sleep(20)
        await c.withLocks([{ meterId, seen: seenOf(o) }], async () => {})
      }
      await keptFor(700)
      await sleep(600)
      t.equal(await other.lease('meter:700', 'someone', 1000), false, 'heard: kept past 200 ms')

      await deafen()
      t.ok(await until(() => !coord.hears(), 1_000), 'does not hear')
      await keptFor(701)
      let free = false
      for (let i = 0; i < 60 && !free; i++) {
        await sleep(25)
        free = await other.lease('meter:701', 'someone', 1000)
      }
      t.ok(free, 'not heard: given back once idle for the short keep time')
      t.equal(await other.lease('meter:700', 'someone', 1000), true, 'the one kept before too')
      await restore()
      t.ok(await until(() => coord.hears()), 'hears again')
    },
  )
}
