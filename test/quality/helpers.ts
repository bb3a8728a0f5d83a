import type { Kind, MeterQualityContext, TimelineReading } from '../../src/actors/quality/index.js'

export const MIN = 60_000
export const T0 = Date.UTC(2024, 0, 1)

export function ctx(over: Partial<MeterQualityContext> = {}): MeterQualityContext {
  return { rolloverMax: null, expectedIntervalMinutes: 15, exchanges: [], ...over }
}

export function rd(
  kind: Kind,
  minute: number,
  value: number | null,
  unitMismatch = false,
): TimelineReading {
  return { kind, recordedAt: T0 + minute * MIN, canonicalValue: value, unitMismatch, flags: [] }
}

/** saldo readings every `step` minutes starting at minute 0 */
export function saldos(values: (number | null)[], step = 15, start = 0): TimelineReading[] {
  return values.map((v, i) => rd('saldo', start + i * step, v))
}

export function cons(values: (number | null)[], step = 15, start = 0): TimelineReading[] {
  return values.map((v, i) => rd('consumption', start + i * step, v))
}
