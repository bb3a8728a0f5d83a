import {
  classifySaldoStep,
  exchangesBetween,
  type MeterQualityContext,
} from '../actors/quality/index.js'

/** Canonical saldo readings of one meter, sorted, unit_mismatch rows already excluded. */
export interface SaldoPoint {
  recordedAt: number
  canonicalValue: number
}

export interface DeriveOptions {
  rolloverMax: number | null
  expectedIntervalMinutes: number | null
  exchanges: MeterQualityContext['exchanges']
  interpolate: 'linear' | null
  unit: 'kwh' | 'm3' | null
}

export interface DerivedRow {
  period_start: number
  period_end: number
  consumption: number | null
  unit: string | null
  gap: boolean
  rollover: boolean
  exchange: boolean
  unknown: boolean
  interpolated: boolean
}

const MIN_MS = 60_000

const f64 = new Float64Array(1)
const i64 = new BigInt64Array(f64.buffer)

/** Adjacent double towards +Infinity (dir = 1) or -Infinity (dir = -1). */
function nextAfter(x: number, dir: 1 | -1): number {
  if (x === 0) return dir * Number.MIN_VALUE
  f64[0] = x
  i64[0]! += x > 0 === dir > 0 ? 1n : -1n
  return f64[0]!
}

/**
 * Split `total` over slots of the given durations in proportion to their duration
 * (equal shares for equal, cadence-long slots). The last slot takes total − (sum of the
 * others), nudged by ulps if needed, so that summing the shares in slot order gives exactly
 * `total` in floating point.
 */
export function splitLinear(total: number, durations: number[]): number[] {
  const span = durations.reduce((a, b) => a + b, 0)
  const shares: number[] = []
  let s = 0
  for (let k = 0; k < durations.length - 1; k++) {
    const share = (total * durations[k]!) / span
    shares.push(share)
    s += share
  }
  let last = total - s
  for (let guard = 0; guard < 64 && s + last !== total; guard++)
    last = nextAfter(last, s + last > total ? -1 : 1)
  shares.push(last)
  return shares
}

/** Bridged delta across the exchanges between two saldo values, or null when unknown. */
function bridgeExchanges(
  prev: number,
  cur: number,
  exs: MeterQualityContext['exchanges'],
): number | null {
  let from = prev
  let total = 0
  for (const e of exs) {
    if (e.oldFinalValue === null || e.newInitialValue === null) return null
    const seg = e.oldFinalValue - from
    if (seg < 0) return null
    total += seg
    from = e.newInitialValue
  }
  const seg = cur - from
  if (seg < 0) return null
  return total + seg
}

/**
 * Derived consumption series from consecutive saldo readings (docs/derive.md).
 */
export function deriveConsumption(points: SaldoPoint[], opts: DeriveOptions): DerivedRow[] {
  const pts = [...points].sort((a, b) => a.recordedAt - b.recordedAt)
  const cadenceMs =
    opts.expectedIntervalMinutes !== null && opts.expectedIntervalMinutes > 0
      ? opts.expectedIntervalMinutes * MIN_MS
      : null
  const rows: DerivedRow[] = []
  let prev: SaldoPoint | null = null
  for (const cur of pts) {
    if (!Number.isFinite(cur.canonicalValue)) continue
    if (prev === null) {
      prev = cur
      continue
    }
    if (cur.recordedAt === prev.recordedAt) continue // duplicate instant: the first one wins
    const start = prev.recordedAt
    const end = cur.recordedAt
    let consumption: number | null
    let rollover = false
    let exchange = false
    const exs = exchangesBetween(opts, start, end)
    if (exs.length > 0) {
      exchange = true
      consumption = bridgeExchanges(prev.canonicalValue, cur.canonicalValue, exs)
    } else {
      const step = classifySaldoStep(prev.canonicalValue, cur.canonicalValue, opts.rolloverMax)
      if (step.type === 'decrease') consumption = null
      else {
        consumption = step.delta
        rollover = step.type === 'rollover'
      }
    }
    const unknown = consumption === null
    const gap = cadenceMs !== null && end - start > cadenceMs
    const base = { unit: opts.unit, gap, rollover, exchange, unknown }
    if (opts.interpolate === 'linear' && gap && consumption !== null && cadenceMs !== null) {
      const durations: number[] = []
      let t = start
      while (end - t > cadenceMs) {
        durations.push(cadenceMs)
        t += cadenceMs
      }
      durations.push(end - t) // a full cadence slot, or the shorter remainder slot
      const shares = splitLinear(consumption, durations)
      let s = start
      durations.forEach((d, k) => {
        rows.push({
          period_start: s,
          period_end: s + d,
          consumption: shares[k]!,
          ...base,
          interpolated: true,
        })
        s += d
      })
    } else {
      rows.push({ period_start: start, period_end: end, consumption, ...base, interpolated: false })
    }
    prev = cur
  }
  return rows
}
