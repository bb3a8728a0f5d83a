/** Reading kinds. */
export type Kind = 'consumption' | 'saldo'

/** Both kinds, in the order readings of one time are listed (consumption first). */
export const KINDS: readonly Kind[] = ['consumption', 'saldo']

/** Data-quality flags of a reading (api-v1.md). */
export type QualityFlag =
  | 'unit_mismatch'
  | 'negative_consumption'
  | 'implausible_rate'
  | 'saldo_mismatch'
  | 'saldo_decrease'
  | 'rollover_wrap'
  | 'meter_exchange'

/** Canonical order of flags; every flag array produced here is sorted by it. */
export const FLAG_ORDER: readonly QualityFlag[] = [
  'unit_mismatch',
  'negative_consumption',
  'implausible_rate',
  'saldo_mismatch',
  'saldo_decrease',
  'rollover_wrap',
  'meter_exchange',
]

export interface TimelineReading {
  kind: Kind
  /** epoch ms */
  recordedAt: number
  canonicalValue: number | null
  unitMismatch: boolean
  /** current stored flags */
  flags: QualityFlag[]
}

export interface MeterExchange {
  exchangedAt: number
  /** canonical units */
  oldFinalValue: number | null
  /** canonical units */
  newInitialValue: number | null
}

export interface MeterQualityContext {
  /** canonical units */
  rolloverMax: number | null
  expectedIntervalMinutes: number | null
  /** canonical units */
  exchanges: MeterExchange[]
}

export function sortFlags(flags: Iterable<QualityFlag>): QualityFlag[] {
  // None or one (nearly every reading): in order already, without a Set and a pass per call.
  if (Array.isArray(flags) && flags.length < 2) return flags.slice()
  const set = new Set(flags)
  return FLAG_ORDER.filter((f) => set.has(f))
}

export function sameFlags(a: readonly QualityFlag[], b: readonly QualityFlag[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

export function isValid(r: { canonicalValue: number | null; unitMismatch: boolean }): boolean {
  return !r.unitMismatch && r.canonicalValue !== null && Number.isFinite(r.canonicalValue)
}
