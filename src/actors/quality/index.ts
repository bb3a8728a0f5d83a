import { isNegativeConsumption } from './consumption.js'
import { isFirstAfterExchange } from './exchange.js'
import { isSaldoMismatch, MISMATCH_MAX_CONSUMPTION } from './mismatch.js'
import { intervalRate, isImplausibleRate, RATE_WINDOW } from './rate.js'
import { saldoStepFlag } from './saldo.js'
import {
  isValid,
  lowerBound,
  sortFlags,
  type Kind,
  type MeterQualityContext,
  type QualityFlag,
  type TimelineReading,
  type ValidPoint,
} from '../../domain/quality.js'
import { unitFlags } from './unit.js'

export * from '../../domain/quality.js'
export { classifySaldoStep, saldoStepFlag, type SaldoStep } from './saldo.js'
export { acrossExchange, exchangesBetween, isFirstAfterExchange } from './exchange.js'
export {
  intervalRate,
  isImplausibleRate,
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
  consumption: ValidPoint[]
  saldo: ValidPoint[]
}

/** Latest valid reading time of any kind strictly before t, or null. */
export function prevAnyTime(view: QualityView, t: number): number | null {
  let best: number | null = null
  for (const arr of [view.consumption, view.saldo]) {
    const i = lowerBound(arr, t) - 1
    if (i >= 0 && (best === null || arr[i]!.t > best)) best = arr[i]!.t
  }
  return best
}

/**
 * Flags of the given families for the valid reading view[kind][i].
 * `rateAt` may be supplied (memoised rates); otherwise rates are computed on the fly.
 */
export function familyFlags(
  view: QualityView,
  kind: Kind,
  i: number,
  ctx: MeterQualityContext,
  families: Families,
  rateAt?: (j: number) => number | null,
): readonly QualityFlag[] {
  const arr = view[kind]
  const p = arr[i]!
  // Made on the first flag: most calls find none (a late reading asks ~26 neighbours).
  let out: QualityFlag[] | null = null
  if (families & FAMILY.self && isNegativeConsumption(kind, p.v))
    (out ??= []).push('negative_consumption')
  if (families & FAMILY.rate) {
    const ra = rateAt ?? ((j: number) => intervalRate(arr, kind, j, ctx))
    if (isImplausibleRate(i, ra)) (out ??= []).push('implausible_rate')
  }
  if (kind === 'saldo') {
    if (families & FAMILY.step) {
      const f = saldoStepFlag(arr, i, ctx)
      if (f) (out ??= []).push(f)
    }
    if (families & FAMILY.mismatch && isSaldoMismatch(arr, i, view.consumption, ctx))
      (out ??= []).push('saldo_mismatch')
  }
  if (families & FAMILY.exchange && isFirstAfterExchange(ctx, prevAnyTime(view, p.t), p.t))
    (out ??= []).push('meter_exchange')
  return out ?? NO_FLAGS
}

/** No flags: one frozen array shared by every reading without any. */
export const NO_FLAGS: readonly QualityFlag[] = Object.freeze([])

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
  const view: QualityView = { consumption: [], saldo: [] }
  const seen = new Map<string, number>()
  sorted.forEach((r, idx) => {
    const k = key(r.kind, r.recordedAt)
    if (seen.has(k)) return
    seen.set(k, idx)
    if (isValid(r)) view[r.kind].push({ t: r.recordedAt, v: r.canonicalValue as number })
  })
  view.consumption.sort((a, b) => a.t - b.t)
  view.saldo.sort((a, b) => a.t - b.t)

  const flagsByKey = new Map<string, QualityFlag[]>()
  for (const kind of ['consumption', 'saldo'] as const) {
    const arr = view[kind]
    const rates = arr.map((_, j) => intervalRate(arr, kind, j, ctx))
    const rateAt = (j: number) => rates[j] ?? null
    for (let i = 0; i < arr.length; i++) {
      flagsByKey.set(
        key(kind, arr[i]!.t),
        sortFlags(familyFlags(view, kind, i, ctx, ALL_FAMILIES, rateAt)),
      )
    }
  }
  return sorted.map((r) => {
    if (!isValid(r)) return sortFlags(unitFlags(r))
    return [...(flagsByKey.get(key(r.kind, r.recordedAt)) ?? [])]
  })
}
