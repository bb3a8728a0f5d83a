// The data of `reading.rejected`: one event per delivery of readings (a /reportData request,
// a webhook delivery, an import, a stream batch), never one per reading. Counts are exact; the meter sample
// is bounded.
import type { IngestOutcome, IngestSource, ItemStatus } from './types.js'

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
  outcome: Partial<Omit<IngestOutcome, 'results'>> & {
    results: readonly RejectedCandidate[]
    source?: IngestSource
  },
  sampleSize = REJECTION_SAMPLE_SIZE,
): RejectionSummary {
  const tally = new RejectionTally(sampleSize)
  tally.add(outcome.results)
  return tally.summary(outcome.source ?? null)
}

/** An item result as far as the summary needs it; `meter` null: the mapping found none. */
export interface RejectedCandidate {
  status: ItemStatus
  meter: string | null
}

/**
 * Counts the rejections of one delivery that spans several ingest calls (an import runs
 * one per chunk) or has items refused before ingest (a webhook's `rejected_unmappable`).
 */
export class RejectionTally {
  private readonly counts: Partial<Record<ItemStatus, number>> = {}
  private readonly meters = new Set<string>()
  total = 0

  constructor(private readonly sampleSize = REJECTION_SAMPLE_SIZE) {}

  add(results: readonly RejectedCandidate[]): void {
    for (const r of results) {
      if (!r.status.startsWith('rejected_')) continue
      this.counts[r.status] = (this.counts[r.status] ?? 0) + 1
      this.total++
      if (r.meter !== null && this.meters.size < this.sampleSize) this.meters.add(r.meter)
    }
  }

  summary(source: IngestSource | null): RejectionSummary {
    return { source, counts: { ...this.counts }, total: this.total, meters: [...this.meters] }
  }
}

/**
 * Sources whose entry point emits `reading.rejected` itself, once per delivery, instead of
 * the pipeline once per ingest call: webhook deliveries (their unmappable items never reach
 * the pipeline) and imports (one ingest call per chunk).
 */
export const SUMMARISED_BY_CALLER: ReadonlySet<IngestSource> = new Set(['webhook', 'import'])
