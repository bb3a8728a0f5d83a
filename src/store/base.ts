// The parts every layer above the store may use, built first by the composition root
// (app.ts): configuration, logging, time, coordination, the store and its core repos.
// Consumers take a Pick of what they use, so a signature says what a part depends on.
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { Config } from '../config/index.js'
import type { Coord } from '../coord/coord.js'
import type { GroupRepo } from './groups.js'
import type { MeterRepo } from './meters.js'
import type { ProfileRepo } from './profiles.js'
import type { Store } from './store.js'
import type { TenantRepo } from './tenants.js'

export interface Base {
  config: Readonly<Config>
  log: Logger
  clock: Clock
  coord: Coord
  store: Store
  tenants: TenantRepo
  meters: MeterRepo
  groups: GroupRepo
  profiles: ProfileRepo
}
