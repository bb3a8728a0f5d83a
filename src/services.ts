// What every stage may use, built once by the composition root (app.ts) and passed down.
import type { Logger } from 'pino'
import type { ActorRegistry } from './actors/registry.js'
import type { DecoderPool } from './decode/index.js'
import type { Events } from './events/stage.js'
import type { Metrics } from './observability/metrics.js'
import type { StreamStage } from './stream/stage.js'
import type { ImportRunner } from './jobs/imports.js'
import type { KeyQuarantine } from './ingest/key-quarantine.js'
import type { WebhookRepo } from './webhooks/repo.js'
import type { MqttService } from './mqtt/stage.js'
import type { Clock } from './clock.js'
import type { Config } from './config/index.js'
import type { Coord } from './coord/coord.js'
import type { Outbox } from './events/outbox.js'
import type { Authenticator } from './http/auth.js'
import type { Ingest } from './ingest/types.js'
import type { Scheduler } from './scheduler/scheduler.js'
import type { Store } from './store/store.js'
import type { GroupRepo } from './store/groups.js'
import type { MeterRepo } from './store/meters.js'
import type { ProfileRepo } from './store/profiles.js'
import type { TenantRepo } from './store/tenants.js'

export interface Services {
  config: Readonly<Config>
  log: Logger
  clock: Clock
  coord: Coord
  store: Store
  tenants: TenantRepo
  meters: MeterRepo
  groups: GroupRepo
  profiles: ProfileRepo
  /** Replaced by the delivering outbox when the events stage is built. */
  outbox: Outbox
  /** The ingest pipeline; set by the ingest stage in buildStages (stages.ts). */
  ingest: Ingest
  auth: Authenticator
  scheduler: Scheduler
  adminToken: string
  // Set by the stage that owns them while buildStages (stages.ts) runs; other stages and
  // the tests reach them here.
  actors?: ActorRegistry
  decoder?: DecoderPool
  events?: Events
  webhooks?: WebhookRepo
  imports?: ImportRunner
  /** wM-Bus telegrams waiting for their key (ingest/key-quarantine.ts). */
  keyQuarantine?: KeyQuarantine
  metrics?: Metrics
  stream?: StreamStage
  mqtt?: MqttService
}
