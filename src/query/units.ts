// Unit families (operator-api.md "Decisions"): wh/kwh → kwh, l/m3 → m3. Used by the query
// and master-data API (display_unit checks, values shown in the display unit). Meter settings
// in canonical units: meterUnit/settingToCanonical in src/ingest/units.ts.
export const UNIT_NAMES = ['kwh', 'wh', 'm3', 'l'] as const
export type UnitName = (typeof UNIT_NAMES)[number]

const FAMILY: Record<UnitName, 'kwh' | 'm3'> = { kwh: 'kwh', wh: 'kwh', m3: 'm3', l: 'm3' }

export const isUnitName = (u: unknown): u is UnitName => typeof u === 'string' && u in FAMILY

export const unitFamily = (u: string | null | undefined): 'kwh' | 'm3' | null =>
  u && isUnitName(u) ? FAMILY[u] : null

/**
 * A canonical value (kWh, m³) in a display unit of its family (wh, l: × 1000). Rounded to 15
 * significant digits so that 1.1 m³ shows as 1100 l, not 1100.0000000000002.
 */
export function fromCanonical(v: number | null, display: string | null | undefined): number | null {
  if (v === null || (display !== 'wh' && display !== 'l')) return v
  return Number((v * 1000).toPrecision(15))
}

/**
 * The unit a meter's numbers are shown in (api-v1.md `display_unit`: null = the family's
 * canonical unit); `canonical` is the canonical unit of the values at hand, when known.
 */
export function displayUnitOf(
  m: { display_unit: string | null },
  canonical: string | null,
): string | null {
  if (m.display_unit !== null && (canonical === null || unitFamily(m.display_unit) === canonical))
    return m.display_unit
  return canonical
}
