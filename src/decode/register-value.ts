// The reading a telegram gives: the record the decoder chose as the current register
// (asm/select.ts; docs/decoders.md, "Reading selection rule") in canonical units. The decoder
// keeps the record's raw number and exponent; the conversion to kWh or m3 happens here, once
// per decoded telegram (the workers, wire.ts; the sync decode; the analyzer).
import type { DecoderCore } from './core.js'
import { S, R, REC_W } from './layout.js'
import { scaled } from './telegram-text.js'

/** Canonical register value: kWh for energy, m3 for volume, HCA units unscaled. */
export function selectedValue(core: DecoderCore): { value: number; unit: 'kwh' | 'm3' | null } {
  const { CTRL, REC } = core
  const o = CTRL[S.SEL]! * REC_W
  const qty = REC[o + R.QTY]!
  const v = REC[o + R.VALUE]!
  const e = REC[o + R.EXP]!
  if (qty === 1) return { value: scaled(v, e - 3), unit: 'kwh' }
  if (qty === 2) return { value: scaled(v, e) / 3.6e6, unit: 'kwh' }
  if (qty === 3) return { value: scaled(v, e), unit: 'm3' }
  return { value: scaled(v, e), unit: null }
}
