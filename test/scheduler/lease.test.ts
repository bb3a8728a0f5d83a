// Exactly one scheduler line runs among instances sharing the coordination store: two
// Scheduler objects over one coord, ticking together, record one run per period; when the
// holder stops, the other takes over. Memory coord here; Redis when redis-server exists.
import t from 'tap'
import { pino } from 'pino'
import { ManualClock } from '../../src/clock.js'
import type { Coord } from '../../src/coord/coord.js'
import { MemoryCoord } from '../../src/coord/memory.js'
import { RedisCoord } from '../../src/coord/redis.js'
import { Scheduler } from '../../src/scheduler/scheduler.js'
import type { Sql } from '../../src/store/sql.js'
import { redisAvailable, startRedis } from '../helpers/redis.js'

function fakeSql(runs: string[]): Sql {
  return {
    kind: 'chdb',
    async query() {
      return []
    },
    async exec() {},
    async insertJsonEachRow(_t, rows) {
      runs.push(JSON.parse(String(rows)).instance)
    },
    async close() {},
  }
}

async function scenario(t: any, coord: Coord, clock: ManualClock) {
  const runs: string[] = []
  const log = pino({ level: 'silent' })
  const a = new Scheduler(fakeSql(runs), coord, clock, 60, log)
  const b = new Scheduler(fakeSql(runs), coord, clock, 60, log)
  const tick = (x: Scheduler) => (x as any).tick() as Promise<void>
  for (let i = 0; i < 5; i++) {
    await Promise.all([tick(a), tick(b)])
    clock.advance(60_000)
  }
  t.equal(runs.length, 5, 'one run per period')
  t.equal(new Set(runs).size, 1, 'always the same holder')
  const holder = runs[0]
  const [gone, other] = holder === (a as any).owner ? [a, b] : [b, a]
  await gone.stop()
  runs.length = 0
  await tick(other)
  t.equal(runs.length, 1)
  t.not(runs[0], holder, 'the other instance took over after release')
}

t.test('memory coord', async (t) => {
  const clock = new ManualClock()
  const coord = new MemoryCoord(() => clock.now())
  await scenario(t, coord, clock)
  await coord.close()
})

t.test('redis coord', { skip: !redisAvailable() && 'redis-server not installed' }, async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const clock = new ManualClock()
  const c1 = new RedisCoord(redis.url, `lease-${Date.now()}:`, () => clock.now())
  await c1.connect()
  t.teardown(() => c1.close())
  await scenario(t, c1, clock)
})
