// What the /api/v1 routes use: the base parts and the services built above them. Each route
// group takes a Pick of these (api/index.ts hands over the whole set once).
import type { Outbox } from '../events/outbox.js'
import type { Authenticator } from '../http/auth.js'
import type { Ingest } from '../ingest/types.js'
import type { Base } from '../store/base.js'
import type { WebhookRepo } from '../webhooks/repo.js'

export interface ApiDeps extends Base {
  auth: Authenticator
  outbox: Outbox
  ingest: Ingest
  webhooks: WebhookRepo
}
