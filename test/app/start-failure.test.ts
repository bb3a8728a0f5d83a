// A start that fails (here: the port is taken) stops what it had built: no Redis connection,
// worker or timer is left behind, so an embedding process can report the error and exit.
import net from 'node:net'
import t from 'tap'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { startApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { redisAvailable, REDIS_SKIP_NOTICE, startRedis } from '../helpers/redis.js'
import { tmpDataDir } from '../helpers/server.js'

if (!redisAvailable()) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  t.test('a failed start closes what it opened', async (t) => {
    const redis = await startRedis()
    t.teardown(() => redis.stop())
    const taken = net.createServer().listen(0, '127.0.0.1')
    await new Promise((r) => taken.once('listening', r))
    t.teardown(() => taken.close())
    const port = (taken.address() as net.AddressInfo).port
    const probe = new Redis(redis.url)
    t.teardown(() => probe.disconnect())
    const clients = async () => (String(await probe.client('LIST')).match(/^id=/gm) ?? []).length
    const before = await clients()

    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: tmpDataDir(),
      REDIS_URL: redis.url,
      CLICKHOUSE_URL: '',
      LOG_LEVEL: 'silent',
      WORKERS: '1',
    })
    await t.rejects(startApp(config, { logger: pino({ level: 'silent' }) }), /cannot listen/)
    // Closed connections leave the server's list once it has read their QUIT.
    let after = await clients()
    for (let i = 0; i < 50 && after > before; i++) {
      await new Promise((r) => setTimeout(r, 20))
      after = await clients()
    }
    t.equal(after, before, 'every Redis connection of the app is closed')
  })
}
