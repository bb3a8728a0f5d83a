import { acrossExchange } from './exchange.js'
import { classifySaldoStep } from './saldo.js'
import { lowerBound, type MeterQualityContext, type ValidPoint } from '../../domain/quality.js'

/** Pairs of saldo readings with more consumption readings than this between them are not checked. */
export const MISMATCH_MAX_CONSUMPTION = 96
/** Absolute tolerance floor, canonical units (kWh / m³). */
export const MISMATCH_ABS_TOLERANCE = 0.01
/** Relative tolerance: 1 % of the larger of |saldo delta| and |consumption sum|. */
export const MISMATCH_REL_DIVISOR = 100

function indexAt(arr: readonly ValidPoint[], t: number): number {
  const i = lowerBound(arr, t)
  return i < arr.length && arr[i]!.t === t ? i : -1
}

/**
 * saldo_mismatch on saldo[i] (b) against its previous valid saldo (a):
 * applies when a and b are not across an exchange, the step is not an unexplained decrease,
 * there are valid consumption readings at exactly a.t and exactly b.t, and at most
 * MISMATCH_MAX_CONSUMPTION valid consumption readings in (a.t, b.t]. Then S = sum of the
 * consumption values in (a.t, b.t] (in time order) is compared with the saldo delta D
 * (rollover-bridged if the step is a wrap); flagged iff |S - D| > max(0.01, max(|S|,|D|)/100).
 */
export function isSaldoMismatch(
  saldo: readonly ValidPoint[],
  i: number,
  cons: readonly ValidPoint[],
  ctx: MeterQualityContext,
): boolean {
  if (i < 1) return false
  const a = saldo[i - 1]!
  const b = saldo[i]!
  if (acrossExchange(ctx, a.t, b.t)) return false
  let d: number
  // A rising register (nearly every step): its delta, without a classified step object.
  if (b.v >= a.v) d = b.v - a.v
  else {
    const step = classifySaldoStep(a.v, b.v, ctx.rolloverMax)
    if (step.type === 'decrease') return false
    d = step.delta
  }
  const ia = indexAt(cons, a.t)
  if (ia < 0) return false
  const ib = indexAt(cons, b.t)
  if (ib < 0) return false
  if (ib - ia > MISMATCH_MAX_CONSUMPTION) return false
  let sum = 0
  for (let k = ia + 1; k <= ib; k++) sum += cons[k]!.v
  const tol = Math.max(
    MISMATCH_ABS_TOLERANCE,
    Math.max(Math.abs(sum), Math.abs(d)) / MISMATCH_REL_DIVISOR,
  )
  return Math.abs(sum - d) > tol
}
