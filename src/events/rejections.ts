// The data of `reading.rejected`: one event per delivery of readings (a /reportData request,
// a webhook delivery, an import), never one per reading. Counts are exact; the meter sample
// is bounded.
import type { IngestOutcome, IngestSource, ItemStatus } from '../ingest/types.js'

export interface RejectionSummary {
  source: IngestSource | null
  /** Exact number of rejected items per status, only statuses that occurred. */
  counts: Partial<Record<ItemStatus, number>>
  /** Rejected items in the delivery (the sum of `counts`). */
  total: number
  /** Distinct identifiers of affected meters, in request order, at most `sampleSize`. */
  meters: string[]
}

export const REJECTION_SAMPLE_SIZE = 20

/**
 * Summary of the rejected items of one delivery; pass the source along with the outcome
 * (`{...outcome, source: req.source}`). The caller emits only when `total > 0`.
 */
export function rejectionSummary(
  outcome: IngestOutcome & { source?: IngestSource },
  sampleSize = REJECTION_SAMPLE_SIZE,
): RejectionSummary {
  const counts: Partial<Record<ItemStatus, number>> = {}
  const meters = new Set<string>()
  let total = 0
  for (const r of outcome.results) {
    if (!r.status.startsWith('rejected_')) continue
    counts[r.status] = (counts[r.status] ?? 0) + 1
    total++
    if (meters.size < sampleSize) meters.add(r.meter)
  }
  return { source: outcome.source ?? null, counts, total, meters: [...meters] }
}
