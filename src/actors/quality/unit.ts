import type { QualityFlag } from '../../domain/quality.js'

/**
 * unit_mismatch: the reading's unit family differs from the meter's unit (decided by the
 * ingest normaliser, which sets `unitMismatch` and leaves canonical_value null). Such a
 * reading carries exactly this flag and is invisible to every other rule.
 */
export function unitFlags(r: { unitMismatch: boolean }): QualityFlag[] {
  return r.unitMismatch ? ['unit_mismatch'] : []
}
