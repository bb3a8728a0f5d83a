// Messages of the ingest pipeline (validate -> decode -> admit -> actors -> store), shared
// by every entry point: /reportData, webhooks, imports and the WebSocket stream.

import type { Kind } from '../domain/quality.js'

export type { Kind }

export type ItemStatus =
  | 'created'
  | 'duplicate'
  | 'rejected_provision_limit'
  | 'rejected_plan_limit'
  | 'rejected_unconfigured'
  | 'rejected_undecodable'
  | 'rejected_meter_retired'
  | 'rejected_unmappable'

export interface ItemResult {
  meter: string
  kind: Kind
  recorded_at: string
  status: ItemStatus
  /** Only where the status alone does not say enough (telegram outcomes, retired state). */
  reason?: string
}

export interface IngestOutcome {
  accepted: number
  duplicates: number
  rejected: number
  /** One per item, in request order. */
  results: ItemResult[]
}

export type IngestSource = 'report' | 'webhook' | 'import' | 'stream' | 'mqtt'

export interface IngestRequest {
  workspaceId: number
  /** Raw items as received (or as mapped by a webhook); validated by the pipeline. */
  items: unknown[]
  source: IngestSource
  /** Field-key prefix for 422 errors: `readings` gives `readings.<i>.<field>`. */
  errorPrefix?: string
}

/**
 * The ingest pipeline as other stages see it. `ingest` validates the whole batch first and
 * throws a 422 ApiError (nothing stored) on any schema violation; otherwise it resolves
 * after every created reading is stored.
 */
export interface Ingest {
  ingest(req: IngestRequest): Promise<IngestOutcome>
}
