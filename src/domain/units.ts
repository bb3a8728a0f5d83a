// Units of meter readings (operator-api.md, "Decisions"): families wh/kwh -> kwh and
// l/m3 -> m3. The one module for ingest (canonical values), meter settings, and what the
// query and master-data API show (display units).

export const UNITS = ['kwh', 'wh', 'm3', 'l'] as const
export type Unit = (typeof UNITS)[number]
export type CanonicalUnit = 'kwh' | 'm3'

const FAMILY: Record<Unit, CanonicalUnit> = { kwh: 'kwh', wh: 'kwh', m3: 'm3', l: 'm3' }
const FACTOR: Record<Unit, number> = { kwh: 1, wh: 0.001, m3: 1, l: 0.001 }

export const isUnit = (u: unknown): u is Unit => typeof u === 'string' && u in FAMILY

/** The canonical unit of a unit's family, or null for anything else. */
export const familyOf = (u: string | null | undefined): CanonicalUnit | null =>
  u && isUnit(u) ? FAMILY[u] : null

/** `value` in `unit` expressed in the family's canonical unit. */
export function toCanonical(value: number, unit: Unit): number {
  const f = FACTOR[unit]
  // Dividing by 1000 keeps decimal inputs exact where multiplying by 0.001 would not.
  return f === 1 ? value : value / 1000
}

export interface Canonical {
  canonicalValue: number | null
  canonicalUnit: CanonicalUnit | null
  unitMismatch: boolean
}

/**
 * Canonical value of a reading for a meter. A reading of another family than the meter's
 * `unit` gets `unit_mismatch` and no canonical value; a meter without a unit accepts any.
 */
export function canonicalize(value: number, unit: Unit, meterUnit: string | null): Canonical {
  const meterFamily = familyOf(meterUnit)
  if (meterFamily && meterFamily !== FAMILY[unit])
    return { canonicalValue: null, canonicalUnit: null, unitMismatch: true }
  return {
    canonicalValue: toCanonical(value, unit),
    canonicalUnit: FAMILY[unit],
    unitMismatch: false,
  }
}

/**
 * The unit a meter's own numbers (rollover_max, exchange baselines) are stated in, and the
 * family its readings must belong to: its `unit`, or for a pulse meter without one its
 * `pulse_unit` (the unit its pulse readings are stored in). The one rule for the actor,
 * the backfill, transfers and derived consumption.
 */
export function meterUnit(m: { unit: string | null; pulse_unit: string | null }): Unit | null {
  if (isUnit(m.unit)) return m.unit
  return isUnit(m.pulse_unit) ? m.pulse_unit : null
}

/** A meter setting (rollover_max, an exchange baseline) in canonical units; see meterUnit. */
export function settingToCanonical(
  m: { unit: string | null; pulse_unit: string | null },
  v: number | null,
): number | null {
  const u = meterUnit(m)
  return v === null || u === null ? v : toCanonical(v, u)
}

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
  if (m.display_unit !== null && (canonical === null || familyOf(m.display_unit) === canonical))
    return m.display_unit
  return canonical
}
