// Pulse counters (operator-api.md, "Pulse counters"): `pulses` (absolute) is a saldo reading,
// `pulse_delta` a consumption reading; the value is pulses × pulse_weight in pulse_unit.
// Ingest converts with the meter's weight at arrival; the backfill converts the stored raw
// payload again with the meter's current weight, through this same function.
import type { Kind } from './types.js'
import { isUnit, type Unit } from '../domain/units.js'

export interface PulseCounts {
  pulses?: number
  pulse_delta?: number
}

interface PulseMeter {
  pulse_weight: number | null
  pulse_unit: string | null
}

/** The readings a pulse payload stands for; null while the meter has no pulse weight. */
export function pulseReadings(
  m: PulseMeter,
  p: PulseCounts,
): { kind: Kind; value: number; unit: Unit }[] | null {
  if (m.pulse_weight === null || !isUnit(m.pulse_unit)) return null
  const out: { kind: Kind; value: number; unit: Unit }[] = []
  if (p.pulses !== undefined)
    out.push({ kind: 'saldo', value: p.pulses * m.pulse_weight, unit: m.pulse_unit })
  if (p.pulse_delta !== undefined)
    out.push({ kind: 'consumption', value: p.pulse_delta * m.pulse_weight, unit: m.pulse_unit })
  return out
}

/** The pulse counts of a stored raw payload (`{"pulses":…}`), or null for any other payload. */
export function storedPulseCounts(rawPayload: unknown): PulseCounts | null {
  let p: unknown = rawPayload
  if (typeof p === 'string') {
    if (!p.includes('pulse')) return null
    try {
      p = JSON.parse(p)
    } catch {
      return null
    }
  }
  if (typeof p !== 'object' || p === null || Array.isArray(p)) return null
  const o = p as Record<string, unknown>
  // Only the pulse_counter payload has these keys (the other shapes refuse unknown fields).
  const keys = Object.keys(o)
  if (!keys.length || !keys.every((k) => k === 'pulses' || k === 'pulse_delta')) return null
  if (o.pulses !== undefined && typeof o.pulses !== 'number') return null
  if (o.pulse_delta !== undefined && typeof o.pulse_delta !== 'number') return null
  return o as PulseCounts
}
