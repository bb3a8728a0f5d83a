import { acrossExchange } from './exchange.js'
import type { Series } from './series.js'
import type { MeterQualityContext, QualityFlag } from '../../domain/quality.js'

export type SaldoStep =
  { type: 'normal'; delta: number } | { type: 'rollover'; delta: number } | { type: 'decrease' }

/**
 * Classify the step between two consecutive saldo values of the same device.
 * - cur >= prev: normal, delta = cur - prev.
 * - cur < prev is a rollover wrap iff rolloverMax > 0, 0 <= cur, prev <= rolloverMax and the
 *   forward (wrapped) distance rolloverMax - prev + cur is strictly shorter than the backward
 *   distance prev - cur (equivalently: wrapped delta < rolloverMax / 2). delta = wrapped distance.
 * - any other decrease is unexplained.
 * Shared by the quality rule (saldo_decrease / rollover_wrap) and derived consumption.
 */
export function classifySaldoStep(
  prev: number,
  cur: number,
  rolloverMax: number | null,
): SaldoStep {
  if (cur >= prev) return { type: 'normal', delta: cur - prev }
  if (rolloverMax !== null && rolloverMax > 0 && cur >= 0 && prev <= rolloverMax) {
    const wrapped = rolloverMax - prev + cur
    if (wrapped < prev - cur) return { type: 'rollover', delta: wrapped }
  }
  return { type: 'decrease' }
}

/** saldo_decrease / rollover_wrap for saldo[i] against its previous valid saldo (none across an exchange). */
export function saldoStepFlag(
  saldo: Series,
  i: number,
  ctx: MeterQualityContext,
): 'saldo_decrease' | 'rollover_wrap' | null {
  if (i < 1) return null
  const av = saldo.v(i - 1)
  const bv = saldo.v(i)
  // A rising register (nearly every step): no classified step object made.
  if (bv >= av || acrossExchange(ctx, saldo.t(i - 1), saldo.t(i))) return null
  const step = classifySaldoStep(av, bv, ctx.rolloverMax)
  if (step.type === 'decrease') return 'saldo_decrease'
  if (step.type === 'rollover') return 'rollover_wrap'
  return null
}

export const STEP_FLAGS: readonly QualityFlag[] = ['saldo_decrease', 'rollover_wrap']
