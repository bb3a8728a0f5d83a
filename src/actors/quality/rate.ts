import { acrossExchange } from './exchange.js'
import { classifySaldoStep } from './saldo.js'
import type { Series } from './series.js'
import type { Kind, MeterQualityContext } from '../../domain/quality.js'

/** Number of preceding intervals (same kind) that form the baseline. */
export const RATE_WINDOW = 24
/** Minimum number of those intervals with a positive rate; fewer → no baseline, no flag. */
export const RATE_MIN_POSITIVE = 4
/** A rate strictly above RATE_FACTOR × baseline is implausible. */
export const RATE_FACTOR = 10

const HOUR_MS = 3_600_000

/**
 * Rate (canonical units per hour) of the interval ending at s[i], or null when undefined:
 * i = 0, across an exchange, a negative consumption value, or an unexplained saldo decrease.
 * consumption: value / hours since the previous valid consumption reading.
 * saldo: (delta, rollover-bridged when the step is a wrap) / hours since the previous valid saldo.
 */
export function intervalRate(
  s: Series,
  kind: Kind,
  i: number,
  ctx: MeterQualityContext,
): number | null {
  if (i < 1) return null
  const at = s.t(i - 1)
  const bt = s.t(i)
  const bv = s.v(i)
  const hours = (bt - at) / HOUR_MS
  if (!(hours > 0)) return null
  if (acrossExchange(ctx, at, bt)) return null
  let amount: number
  if (kind === 'consumption') {
    if (bv < 0) return null
    amount = bv
  } else {
    const av = s.v(i - 1)
    if (bv >= av) {
      // The common case, without the allocation of a classified step (this runs ~25 times
      // per inserted reading).
      amount = bv - av
    } else {
      const step = classifySaldoStep(av, bv, ctx.rolloverMax)
      if (step.type === 'decrease') return null
      amount = step.delta
    }
  }
  return amount / hours
}

/**
 * intervalRate of s[i], kept in the series until a reading is put in before it (an
 * insert asks the RATE_WINDOW rates before it: worked out each time, an append's were the
 * largest self time of its turn). The first reading's predecessor may have been dropped
 * from a window: no interval.
 */
export function rateAt(s: Series, kind: Kind, i: number, ctx: MeterQualityContext): number | null {
  if (i < 1) return null
  const known = s.knownRate(i)
  if (known !== undefined) return known
  const r = intervalRate(s, kind, i, ctx)
  s.keepRate(i, r)
  return r
}

/**
 * implausible_rate on s[i]: its interval rate r is defined and
 * r > RATE_FACTOR × max(positive rates of the RATE_WINDOW intervals ending at s[i-1] … s[i-RATE_WINDOW]),
 * provided at least RATE_MIN_POSITIVE of those rates are positive.
 */
export function isImplausibleRate(
  s: Series,
  kind: Kind,
  i: number,
  ctx: MeterQualityContext,
): boolean {
  const r = rateAt(s, kind, i, ctx)
  // No positive rate exceeds a baseline of positive rates: a meter at rest (no consumption,
  // a register standing still) is never implausible, and its earlier intervals, which
  // would all be read for want of positive ones, need not be.
  if (r === null || r <= 0) return false
  let positives = 0
  let baseline = 0
  for (let j = i - 1; j >= 1 && j >= i - RATE_WINDOW; j--) {
    const rj = rateAt(s, kind, j, ctx)
    if (rj !== null && rj > 0) {
      positives++
      if (rj > baseline) baseline = rj
      // Both only grow from here: once enough rates are in and r is within the bound, no
      // older interval can make it implausible. A plausible rate (nearly every reading)
      // stops after a few intervals instead of reading all RATE_WINDOW.
      if (positives >= RATE_MIN_POSITIVE && r <= RATE_FACTOR * baseline) return false
    }
  }
  if (positives < RATE_MIN_POSITIVE) return false
  return r > RATE_FACTOR * baseline
}
