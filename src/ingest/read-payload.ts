// Each profile kind says differently where an item's readings are (kind/value/unit, pulses,
// a telegram, a workspace profile's object or frame); its reader is the one place that knows.
import { inspectTelegram, type FrameLayout } from '../decode/index.js'
import { compile } from '../validate.js'
import { ObjectPayload, PulsePayload, TelegramPayload } from './schema.js'
import type { Kind } from './types.js'
import { isUnit, type Unit } from '../domain/units.js'
import type { BatchErrors } from './batch-errors.js'
import type { PreparedItem } from './prepared-item.js'

const pulseCheck = compile(PulsePayload)
const telegramCheck = compile(TelegramPayload)
const objectCheck = compile(ObjectPayload)

export type Item = Record<string, unknown> & { recorded_at: string }
/** An item past the checks every item passes, whatever its profile (prepare.ts `checkItem`). */
export interface CheckedItem {
  item: Item
  hasPayload: boolean
  recordedAt: number
}

export type Inspection = ReturnType<typeof inspectTelegram>

/** The reader of the item's profile kind fills in its readings (or what decodes them). */
export function readByProfile(
  base: PreparedItem,
  c: CheckedItem,
  inspection: Inspection | null,
  key: string,
  errs: BatchErrors,
): PreparedItem | null {
  const p = base.profile
  if (p.key === 'generic') return readGeneric(base, c, key, errs)
  if (!c.hasPayload)
    return errs.add(`${key}.payload`, `The payload field is required for profile ${p.key}.`)
  if (p.key === 'pulse_counter') return readPulses(base, c.item.payload, key, errs)
  if (p.key === 'wmbus_oms') return readTelegram(base, c.item.payload, inspection, key, errs)
  return readWorkspaceProfile(base, c.item, key, errs)
}

function readGeneric(
  base: PreparedItem,
  c: CheckedItem,
  key: string,
  errs: BatchErrors,
): PreparedItem | null {
  if (c.hasPayload)
    return errs.add(
      `${key}.payload`,
      'The generic profile takes kind, value and unit, not a payload.',
    )
  base.kind = c.item.kind as Kind
  base.readings = [{ kind: base.kind, value: c.item.value as number, unit: c.item.unit as Unit }]
  return base
}

function readPulses(
  base: PreparedItem,
  payload: unknown,
  key: string,
  errs: BatchErrors,
): PreparedItem | null {
  if (!pulseCheck.Check(payload)) return errs.schema(PulsePayload, payload, `${key}.payload`)
  const pp = payload as { pulses?: number; pulse_delta?: number }
  if (pp.pulses === undefined && pp.pulse_delta === undefined)
    return errs.add(`${key}.payload`, 'The payload must carry pulses and/or pulse_delta.')
  base.kind = pp.pulses !== undefined ? 'saldo' : 'consumption'
  base.pulse = pp
  return base
}

function readTelegram(
  base: PreparedItem,
  payload: unknown,
  inspection: Inspection | null,
  key: string,
  errs: BatchErrors,
): PreparedItem | null {
  if (!telegramCheck.Check(payload)) return errs.schema(TelegramPayload, payload, `${key}.payload`)
  const hex = (payload as { telegram: string }).telegram
  inspection ??= inspectTelegram(hex)
  if (!inspection.ok)
    return errs.add(`${key}.payload.telegram`, `The telegram is invalid: ${inspection.error}.`)
  base.telegram = {
    hex,
    encrypted: inspection.encrypted,
    fingerprint: inspection.fingerprint,
  }
  return base
}

/** Workspace (meter-model) profile: object form, or one encoded frame with a decoder. */
function readWorkspaceProfile(
  base: PreparedItem,
  item: Item,
  key: string,
  errs: BatchErrors,
): PreparedItem | null {
  const p = base.profile
  const payload = item.payload
  const unit = (item.unit as Unit | undefined) ?? (isUnit(p.unit) ? p.unit : undefined)
  if (!unit)
    return errs.add(`${key}.unit`, `The unit field is required: profile ${p.key} declares no unit.`)
  const kind: Kind = p.kind ?? 'saldo'
  if (p.decoder) {
    if (typeof payload !== 'string')
      return errs.add(
        `${key}.payload`,
        `Profile ${p.key} takes one ${(p.decoder as FrameLayout).encoding} encoded frame.`,
      )
    base.kind = kind
    base.readings = [{ kind, value: NaN, unit }]
    base.frame = payload
    return base
  }
  if (!objectCheck.Check(payload)) return errs.schema(ObjectPayload, payload, `${key}.payload`)
  const op = payload as { value: number; status?: string[] }
  if (!Number.isFinite(op.value))
    return errs.add(`${key}.payload.value`, 'The value field must be a finite number.')
  base.kind = kind
  base.readings = [{ kind, value: op.value, unit }]
  base.rawFlags = op.status ?? null
  return base
}
