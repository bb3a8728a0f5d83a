import { isNegativeConsumption } from './consumption.js'
import { isFirstAfterExchange } from './exchange.js'
import { isSaldoMismatch, MISMATCH_MAX_CONSUMPTION } from './mismatch.js'
import { isImplausibleRate, RATE_WINDOW } from './rate.js'
import { saldoStepFlag } from './saldo.js'
import { NO_FLAGS, Series } from './series.js'
import {
  isValid,
  sortFlags,
  KINDS,
  type Kind,
  type MeterQualityContext,
  type QualityFlag,
  type TimelineReading,
} from '../../domain/quality.js'
import { unitFlags } from './unit.js'

export * from '../../domain/quality.js'
export { classifySaldoStep, saldoStepFlag, type SaldoStep } from './saldo.js'
export { acrossExchange, exchangesBetween, isFirstAfterExchange } from './exchange.js'
export { NO_FLAGS, Series } from './series.js'
export {
  intervalRate,
  isImplausibleRate,
  rateAt,
  RATE_WINDOW,
  RATE_MIN_POSITIVE,
  RATE_FACTOR,
} from './rate.js'
export {
  isSaldoMismatch,
  MISMATCH_MAX_CONSUMPTION,
  MISMATCH_ABS_TOLERANCE,
  MISMATCH_REL_DIVISOR,
} from './mismatch.js'
export { isNegativeConsumption } from './consumption.js'
export { unitFlags } from './unit.js'

/**
 * How many valid readings of EACH kind before t (recorded_at < t) and from t on
 * (recorded_at >= t) the flags of a reading inserted at t, and of every reading it can change,
 * depend on. Rate needs RATE_WINDOW + 1 earlier readings and changes up to RATE_WINDOW + 1
 * later ones; saldo_mismatch needs the consumption readings between two saldo readings
 * (at most MISMATCH_MAX_CONSUMPTION + 1 of them).
 */
export const NEIGHBOURHOOD = Math.max(RATE_WINDOW + 1, MISMATCH_MAX_CONSUMPTION + 1)

/**
 * Flag families, recomputed independently by the timeline: bits of a mask, so the families
 * a late reading touches on each neighbour are a number, not a Set per neighbour.
 */
export const FAMILY = { self: 1, rate: 2, step: 4, mismatch: 8, exchange: 16 } as const
export type Family = keyof typeof FAMILY
/** A set of families (FAMILY bits). */
export type Families = number

export const ALL_FAMILIES: Families = 31

const FAMILY_FLAGS: Record<Family, readonly QualityFlag[]> = {
  self: ['unit_mismatch', 'negative_consumption'],
  rate: ['implausible_rate'],
  step: ['saldo_decrease', 'rollover_wrap'],
  mismatch: ['saldo_mismatch'],
  exchange: ['meter_exchange'],
}

/** The flags the families of a mask compute (what recomputing them first drops), by mask. */
export const FLAGS_OF: readonly ReadonlySet<QualityFlag>[] = Array.from(
  { length: ALL_FAMILIES + 1 },
  (_, mask) =>
    new Set(
      (Object.keys(FAMILY) as Family[])
        .filter((f) => mask & FAMILY[f])
        .flatMap((f) => FAMILY_FLAGS[f]),
    ),
)

/** Valid readings of one meter, per kind, sorted by t (unique t per kind). */
export interface QualityView {
  consumption: Series
  saldo: Series
}

/** Latest valid reading time of any kind strictly before t, or null. */
export function prevAnyTime(view: QualityView, t: number): number | null {
  const c = view.consumption
  const s = view.saldo
  const i = c.lowerBound(t) - 1
  const j = s.lowerBound(t) - 1
  if (i < 0) return j < 0 ? null : s.t(j)
  return j < 0 ? c.t(i) : Math.max(c.t(i), s.t(j))
}

/** Flags of the given families for the valid reading view[kind][i]. */
export function familyFlags(
  view: QualityView,
  kind: Kind,
  i: number,
  ctx: MeterQualityContext,
  families: Families,
): readonly QualityFlag[] {
  const arr = view[kind]
  // Made on the first flag: most calls find none (a late reading asks ~26 neighbours).
  let out: QualityFlag[] | null = null
  if (families & FAMILY.self && isNegativeConsumption(kind, arr.v(i)))
    (out ??= []).push('negative_consumption')
  if (families & FAMILY.rate && isImplausibleRate(arr, kind, i, ctx))
    (out ??= []).push('implausible_rate')
  if (kind === 'saldo') {
    if (families & FAMILY.step) {
      const f = saldoStepFlag(arr, i, ctx)
      if (f) (out ??= []).push(f)
    }
    if (families & FAMILY.mismatch && isSaldoMismatch(arr, i, view.consumption, ctx))
      (out ??= []).push('saldo_mismatch')
  }
  if (families & FAMILY.exchange) {
    const t = arr.t(i)
    if (isFirstAfterExchange(ctx, prevAnyTime(view, t), t)) (out ??= []).push('meter_exchange')
  }
  return out ?? NO_FLAGS
}

function key(kind: Kind, t: number): string {
  return `${kind}:${t}`
}

/**
 * Batch form: flags for every reading of a meter's full history (both kinds). The result is
 * index-aligned with the input. The input's own `flags` are ignored. Input order does not
 * matter (readings are grouped and ordered by recorded_at internally); if (kind, recordedAt)
 * occurs more than once, the first occurrence is the reading and later ones get its flags.
 */
export function computeFlags(sorted: TimelineReading[], ctx: MeterQualityContext): QualityFlag[][] {
  const points: Record<Kind, { t: number; v: number }[]> = { consumption: [], saldo: [] }
  const seen = new Map<string, number>()
  sorted.forEach((r, idx) => {
    const k = key(r.kind, r.recordedAt)
    if (seen.has(k)) return
    seen.set(k, idx)
    if (isValid(r)) points[r.kind].push({ t: r.recordedAt, v: r.canonicalValue as number })
  })
  const byTime = (a: { t: number }, b: { t: number }) => a.t - b.t
  const view: QualityView = {
    consumption: Series.of(points.consumption.sort(byTime)),
    saldo: Series.of(points.saldo.sort(byTime)),
  }

  const flagsByKey = new Map<string, QualityFlag[]>()
  for (const kind of KINDS) {
    const arr = view[kind]
    for (let i = 0; i < arr.length; i++)
      flagsByKey.set(key(kind, arr.t(i)), sortFlags(familyFlags(view, kind, i, ctx, ALL_FAMILIES)))
  }
  return sorted.map((r) => {
    if (!isValid(r)) return sortFlags(unitFlags(r))
    return [...(flagsByKey.get(key(r.kind, r.recordedAt)) ?? [])]
  })
}
