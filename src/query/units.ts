// Unit families (operator-api.md "Decisions"): wh/kwh → kwh, l/m3 → m3. Used by the query
// and master-data API (display_unit checks, exchange baselines and rollover in canonical units).
export const UNIT_NAMES = ['kwh', 'wh', 'm3', 'l'] as const
export type UnitName = (typeof UNIT_NAMES)[number]

const FAMILY: Record<UnitName, 'kwh' | 'm3'> = { kwh: 'kwh', wh: 'kwh', m3: 'm3', l: 'm3' }

export const isUnitName = (u: unknown): u is UnitName => typeof u === 'string' && u in FAMILY

export const unitFamily = (u: string | null | undefined): 'kwh' | 'm3' | null =>
  u && isUnitName(u) ? FAMILY[u] : null

/** `v` in unit `u` expressed canonically (divide, so decimal inputs stay exact). */
export function inCanonical(v: number, u: string | null | undefined): number {
  return u === 'wh' || u === 'l' ? v / 1000 : v
}
