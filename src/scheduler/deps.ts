// What the scheduler's tasks use: the base parts, the outbox they emit to, the key
// quarantine retention prunes, and the import runner. Each task takes a Pick of these.
import type { Outbox } from '../events/outbox.js'
import type { KeyQuarantine } from '../ingest/key-quarantine.js'
import type { ImportRunner } from '../jobs/imports.js'
import type { Base } from '../store/base.js'

export interface TaskDeps extends Base {
  outbox: Outbox
  keyQuarantine: KeyQuarantine
  imports: ImportRunner
}
