// What decoding one telegram comes to for ingest: ok with the reading, its statuses and the
// stored payload, or a rejection with its reason. outcomeOf builds it from the decoder's
// state (the sync decode, tests, bench); from the pool the same outcome is read out of the
// workers' result buffer instead (wire.ts), so no record object is made there.
import type { DecoderCore } from './core.js'
import { S, RC, E, REASONS } from './layout.js'
import { buildRecords, linkInfo } from './payload-records.js'
import { selectedValue } from './register-value.js'
import { statusFlags } from './status-flags.js'
import { fingerprintOf, identifierOf } from './telegram-identity.js'

export type TelegramOutcome =
  | {
      status: 'ok'
      identifier: string
      value: number
      unit: 'kwh' | 'm3' | null
      rawFlags: string[]
      statuses: string[]
      /**
       * The stored raw payload, final JSON text:
       * `{"telegram":"<hex>","decoded":{"link":{…},"records":[…]}}`. From the pool it is built
       * in the worker, so the main thread never materialises record objects.
       */
      rawPayload: string
      /** rawPayload as a JSON string literal. */
      rawJson: string
      /**
       * From the pool: rawPayload as the readings INSERT carries it, a TabSeparated field
       * (`inTsv`), in UTF-8 as the worker wrote it: a view of the batch's result buffer.
       * Ingest writes these bytes into the INSERT body as they are (no string made), and
       * rawPayload, rawJson and records are made from them only when read (wire.ts).
       */
      rawTsvBytes?: Uint8Array
      /** `{ link, records }`; from the pool parsed lazily out of rawPayload on read. */
      records: unknown
      /** fingerprintOf: access number and application bytes, for repeats heard by several gateways. */
      fingerprint: number
    }
  | { status: 'rejected_unconfigured'; reason: string }
  | { status: 'rejected_undecodable'; reason: string }
  | { status: 'invalid'; reason: string }

export function reasonOf(core: DecoderCore, fallback: number): string {
  const r = core.CTRL[S.REASON]!
  return REASONS[r || fallback] ?? 'undecodable'
}

/** Builds the full outcome after runTelegram (`hex`: the telegram as sent, for rawPayload). */
export function outcomeOf(core: DecoderCore, code: number, hex = ''): TelegramOutcome {
  if (code === RC.OK) {
    const { value, unit } = selectedValue(core)
    const { rawFlags, statuses } = statusFlags(core.CTRL[S.ST]!, core.CTRL[S.ERRFLAGS]!)
    const records = { link: linkInfo(core), records: buildRecords(core) }
    const rawPayload = JSON.stringify({ telegram: hex, decoded: records })
    return {
      status: 'ok',
      identifier: identifierOf(core),
      value,
      unit,
      rawFlags,
      statuses,
      rawPayload,
      rawJson: JSON.stringify(rawPayload),
      records,
      fingerprint: fingerprintOf(core),
    }
  }
  if (code === RC.INVALID) return { status: 'invalid', reason: reasonOf(core, E.NOT_DECODED) }
  if (code === RC.UNCONFIGURED)
    return { status: 'rejected_unconfigured', reason: REASONS[E.ENCRYPTED_NO_KEY]! }
  return { status: 'rejected_undecodable', reason: reasonOf(core, E.NOT_DECODED) }
}
