// A second ingest "instance" in the test's process: its own Redis client, meter index,
// history loader, meter leases and actors, sharing the test server's store, as another
// process of the same deployment would share its ClickHouse. The server must run with
// REDIS_URL set (its coordinator is the one the second's key prefix is taken from).
import { ActorRegistry } from '../../src/actors/registry.js'
import { CoordMeterLocks } from '../../src/actors/meter-locks.js'
import { RedisCoord } from '../../src/coord/redis.js'
import type { DecoderPool } from '../../src/decode/pool.js'
import { MemoryOutbox } from '../../src/events/outbox.js'
import { IngestPipeline } from '../../src/ingest/pipeline.js'
import { HistoryLoader } from '../../src/store/history.js'
import { MeterRepo } from '../../src/store/meters.js'
import { ProfileRepo } from '../../src/store/profiles.js'
import { TenantRepo } from '../../src/store/tenants.js'
import type { TestServer } from './server.js'

export interface SecondInstance {
  ingest: IngestPipeline
  history: HistoryLoader
  locks: CoordMeterLocks
  actors: ActorRegistry
  close(): Promise<void>
}

/** Telegrams need a decoder (the server's pool may be shared) and, for repeats, a window. */
export interface SecondOptions {
  decoder?: DecoderPool
  telegramRepeatWindowMs?: number
}

export async function secondInstance(
  s: TestServer,
  redisUrl: string,
  opts: SecondOptions = {},
): Promise<SecondInstance> {
  const coord = new RedisCoord(redisUrl, (s.app.parts.coord as RedisCoord).prefix)
  await coord.connect()
  const store = s.app.parts.store
  const meters = new MeterRepo(store, coord)
  await meters.init()
  const profiles = new ProfileRepo(store.sql, coord)
  await profiles.init()
  const tenants = new TenantRepo(store, coord)
  await tenants.init()
  const history = new HistoryLoader(store.sql)
  const locks = new CoordMeterLocks(coord, { clock: store })
  const actors = new ActorRegistry({
    store,
    history,
    outbox: new MemoryOutbox(),
    locks,
    takeUnused: (id) => meters.takeUnused(id),
    now: () => Date.now(),
  })
  const ingest = new IngestPipeline({
    meters,
    profiles,
    tenants,
    coord,
    outbox: new MemoryOutbox(),
    decoder: opts.decoder ?? null,
    actors,
    now: () => Date.now(),
    maxItems: 10_000,
    ...(opts.telegramRepeatWindowMs ? { telegramRepeatWindowMs: opts.telegramRepeatWindowMs } : {}),
  })
  return {
    ingest,
    history,
    locks,
    actors,
    close: async () => {
      await locks.close()
      await coord.close()
    },
  }
}
