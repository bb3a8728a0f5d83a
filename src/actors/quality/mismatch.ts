import { acrossExchange } from './exchange.js'
import { classifySaldoStep } from './saldo.js'
import type { Series } from './series.js'
import type { MeterQualityContext } from '../../domain/quality.js'

/** Pairs of saldo readings with more consumption readings than this between them are not checked. */
export const MISMATCH_MAX_CONSUMPTION = 96
/** Absolute tolerance floor, canonical units (kWh / m³). */
export const MISMATCH_ABS_TOLERANCE = 0.01
/** Relative tolerance: 1 % of the larger of |saldo delta| and |consumption sum|. */
export const MISMATCH_REL_DIVISOR = 100

/**
 * saldo_mismatch on saldo[i] (b) against its previous valid saldo (a):
 * applies when a and b are not across an exchange, the step is not an unexplained decrease,
 * there are valid consumption readings at exactly a.t and exactly b.t, and at most
 * MISMATCH_MAX_CONSUMPTION valid consumption readings in (a.t, b.t]. Then S = sum of the
 * consumption values in (a.t, b.t] (in time order) is compared with the saldo delta D
 * (rollover-bridged if the step is a wrap); flagged iff |S - D| > max(0.01, max(|S|,|D|)/100).
 */
export function isSaldoMismatch(
  saldo: Series,
  i: number,
  cons: Series,
  ctx: MeterQualityContext,
): boolean {
  if (i < 1) return false
  const at = saldo.t(i - 1)
  const bt = saldo.t(i)
  const av = saldo.v(i - 1)
  const bv = saldo.v(i)
  if (acrossExchange(ctx, at, bt)) return false
  let d: number
  // A rising register (nearly every step): its delta, without a classified step object.
  if (bv >= av) d = bv - av
  else {
    const step = classifySaldoStep(av, bv, ctx.rolloverMax)
    if (step.type === 'decrease') return false
    d = step.delta
  }
  const ia = cons.indexOf(at)
  if (ia < 0) return false
  const ib = cons.indexOf(bt)
  if (ib < 0) return false
  if (ib - ia > MISMATCH_MAX_CONSUMPTION) return false
  let sum = 0
  for (let k = ia + 1; k <= ib; k++) sum += cons.v(k)
  const tol = Math.max(
    MISMATCH_ABS_TOLERANCE,
    Math.max(Math.abs(sum), Math.abs(d)) / MISMATCH_REL_DIVISOR,
  )
  return Math.abs(sum - d) > tol
}
