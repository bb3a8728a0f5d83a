// A second ingest "instance" in the test's process: its own Redis client, meter index,
// profiles and tenants, and the ingest part the service builds (buildIngest: decoder pool,
// history loader, meter leases, actors, pipeline), sharing the test server's store, as
// another process of the same deployment would share its ClickHouse. The server must run
// with REDIS_URL set (its coordinator is the one the second's key prefix is taken from).
import type { CoordMeterLocks } from '../../src/actors/meter-locks.js'
import type { ActorRegistry } from '../../src/actors/registry.js'
import { RedisCoord } from '../../src/coord/redis.js'
import { MemoryOutbox } from '../../src/events/outbox.js'
import { buildIngest } from '../../src/ingest/build.js'
import type { IngestPipeline } from '../../src/ingest/pipeline.js'
import type { HistoryLoader } from '../../src/store/history.js'
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

export async function secondInstance(s: TestServer, redisUrl: string): Promise<SecondInstance> {
  const { config, log, clock, store } = s.app.parts
  const coord = new RedisCoord(redisUrl, (s.app.parts.coord as RedisCoord).prefix)
  await coord.connect()
  const meters = new MeterRepo(store, coord)
  await meters.init()
  const profiles = new ProfileRepo(store.sql, coord)
  await profiles.init()
  const tenants = new TenantRepo(store, coord)
  await tenants.init()
  const parts = await buildIngest({
    config,
    log,
    clock,
    coord,
    store,
    tenants,
    meters,
    profiles,
    outbox: new MemoryOutbox(),
  })
  const locks = parts.locks!
  return {
    ingest: parts.pipeline,
    history: parts.actors.env.history as HistoryLoader,
    locks,
    actors: parts.actors,
    close: async () => {
      await locks.close()
      await parts.decoder.destroy()
      await coord.close()
    },
  }
}
