import type { MeterQualityContext } from '../../domain/quality.js'

/**
 * Device segments: a reading at t belongs to the device installed by the latest exchange
 * with exchangedAt < t. A reading at exactly exchangedAt still belongs to the old device.
 * Two readings at a < b are "across an exchange" iff some exchange has a <= exchangedAt < b.
 */
export function exchangesBetween(
  ctx: Pick<MeterQualityContext, 'exchanges'>,
  a: number,
  b: number,
) {
  return ctx.exchanges
    .filter((e) => a <= e.exchangedAt && e.exchangedAt < b)
    .sort((x, y) => x.exchangedAt - y.exchangedAt)
}

export function acrossExchange(
  ctx: Pick<MeterQualityContext, 'exchanges'>,
  a: number,
  b: number,
): boolean {
  for (const e of ctx.exchanges) if (a <= e.exchangedAt && e.exchangedAt < b) return true
  return false
}

/**
 * meter_exchange: the reading is the first valid reading (any kind) after an exchange, i.e.
 * some exchange lies in [prevAnyT, t) where prevAnyT is the latest valid reading of any kind
 * strictly before t (-Infinity when there is none). Readings of both kinds at the same
 * instant are both "first".
 */
export function isFirstAfterExchange(
  ctx: Pick<MeterQualityContext, 'exchanges'>,
  prevAnyT: number | null,
  t: number,
): boolean {
  return acrossExchange(ctx, prevAnyT ?? Number.NEGATIVE_INFINITY, t)
}
