// What the admin routes use: the base parts and the services built above them. Each route
// group takes a Pick of these (admin/index.ts hands over the whole set once).
import type { Events } from '../events/build.js'
import type { Outbox } from '../events/outbox.js'
import type { Authenticator } from '../http/auth.js'
import type { KeyQuarantine } from '../ingest/key-quarantine.js'
import type { Ingest } from '../ingest/types.js'
import type { ImportRunner } from '../jobs/imports.js'
import type { MqttService } from '../mqtt/build.js'
import type { Scheduler } from '../scheduler/scheduler.js'
import type { Base } from '../store/base.js'
import type { WebhookRepo } from '../webhooks/repo.js'

export interface AdminDeps extends Base {
  adminToken: string
  auth: Authenticator
  scheduler: Scheduler
  outbox: Outbox
  events: Events
  ingest: Ingest
  webhooks: WebhookRepo
  imports: ImportRunner
  keyQuarantine: KeyQuarantine
  mqtt: MqttService
}
