// What the jobs (imports, key replay, backfill) use: the base parts and the ingest pipeline
// they feed. Each job takes a Pick of these.
import type { Outbox } from '../events/outbox.js'
import type { KeyQuarantine } from '../ingest/key-quarantine.js'
import type { Ingest } from '../ingest/types.js'
import type { Base } from '../store/base.js'

export interface JobDeps extends Base {
  ingest: Ingest
  outbox: Outbox
  keyQuarantine: KeyQuarantine
}
