import type { BodyWriter } from './body-writer.js'
import { parseChTime, tsvArray, tsvNum, tsvOrNull, tsvText, versionText } from './sql.js'

// A stored `readings` row as SELECT * returns it. 64-bit integers arrive as numbers from
// chDB and as strings from a ClickHouse server, hence the unions.
export interface StoredReadingRow {
  workspace_id: number | string
  meter_id: number | string
  kind: 'consumption' | 'saldo'
  recorded_at: string
  value: number
  unit: string | null
  canonical_value: number | null
  canonical_unit: string | null
  quality_flags: string[]
  raw_payload: string
  ingested_at: string
  version: number | string
  /** Embedded engine only (migration 13): the status report the row carries, if any. */
  has_status?: number
  status_raw_flags?: string[]
  status_codes?: string[]
}

/** A readings row on its way to the store (the meter actor's rows, written by `writeReadingRow`). */
export interface RowOut {
  kind: string
  recordedAt: string
  /** `recordedAt` as epoch ms (the rollup feed's row, feed-rows.ts). */
  recordedAtMs: number
  value: number
  unit: string | null
  canonicalValue: number | null
  canonicalUnit: string | null
  flags: readonly string[]
  rawTsv: RawPayload
  ingestedAt: string
  version: number
  /** The status report the row carries (embedded engine only, status.ts), else null. */
  status: { rawFlags: string[]; statuses: string[] } | null
}

/** A stored row as a row to write again (the actor's restate gives it new flags and version). */
export function rowOutOf(old: StoredReadingRow): RowOut {
  return {
    kind: old.kind,
    recordedAt: old.recorded_at,
    recordedAtMs: parseChTime(old.recorded_at),
    value: Number(old.value),
    unit: old.unit,
    canonicalValue: old.canonical_value === null ? null : Number(old.canonical_value),
    canonicalUnit: old.canonical_unit,
    flags: old.quality_flags,
    rawTsv: tsvText(old.raw_payload),
    ingestedAt: old.ingested_at,
    version: Number(old.version),
    // Kept: until the feed has written it, the row is where its status report is.
    status:
      Number(old.has_status) === 1
        ? { rawFlags: old.status_raw_flags ?? [], statuses: old.status_codes ?? [] }
        : null,
  }
}

const COLUMNS = [
  'workspace_id',
  'meter_id',
  'kind',
  'recorded_at',
  'value',
  'unit',
  'canonical_value',
  'canonical_unit',
  'quality_flags',
  'raw_payload',
  'ingested_at',
  'version',
] as const
const WITH_STATUS = [...COLUMNS, 'has_status', 'status_raw_flags', 'status_codes'] as const

/**
 * The columns of the readings writer's TabSeparated rows, in order: with the status report
 * columns where readings rows carry them (the embedded engine, migration 13).
 */
export const readingsColumns = (statusCarried: boolean): readonly string[] =>
  statusCarried ? WITH_STATUS : COLUMNS

/**
 * The start of every readings row of one meter (its first two columns): made once per meter
 * by its actor, not per row.
 */
export interface RowHeads {
  row: string
}

export const rowHeads = (ws: number, meterId: number): RowHeads => ({
  row: `${ws}\t${meterId}\t`,
})

/**
 * A generic item's raw payload, kept as its parts until its row is written: the item had the
 * keys meter, kind, value, unit and recorded_at, in that order and no others, and none of its
 * strings needs escaping in JSON or TabSeparated (`isPlainGenericItem`). Its stored text is
 * then JSON.stringify's, made from these and the row's own kind, value and unit. Serialising
 * every generic item at validation was the largest line of the gateway's main thread (6 % of
 * its samples, a service profile); this costs half as much and no string lives until the row.
 */
export interface ItemParts {
  /** The item's `meter`. */
  readonly identifier: string
  /** The item's `recorded_at`. */
  readonly recordedAtText: string
}

/**
 * A reading's raw payload on its way to its row, from validation through the meter's turn:
 * its stored text (JSON) as a TabSeparated field, backslash, tab and newline escaped
 * (`tsvText`); a decoded telegram's as the decoder worker's UTF-8 bytes of that field
 * (decode/wire.ts); a generic item of the usual shape as its parts (`ItemParts`).
 */
export type RawPayload = string | Uint8Array | ItemParts

const GENERIC_KEYS = ['meter', 'kind', 'value', 'unit', 'recorded_at'] as const

/** Whether JSON.stringify writes `s` as it is between its quotes, and TabSeparated too. */
function isPlain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    // Control characters (tab and newline among them), quote, backslash, and surrogates
    // (JSON.stringify escapes a lone one; a pair is left to it too).
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false
  }
  return true
}

/**
 * Whether a checked generic item (`meter`, `recorded_at`, `unit` and `kind` strings, `value` a
 * finite number, `recorded_at` read by `parseIsoTimestamp`) can be stored as `ItemParts`: its
 * JSON text is then the one `writeReadingRow` writes from them. Its `recorded_at` is not
 * looked at again: the timestamp's check lets through only ASCII digits and `-T :.+Zz`, and
 * going over its 24 characters once more was most of this function's time (service profile).
 */
export function isPlainGenericItem(item: Record<string, unknown>): boolean {
  let n = 0
  for (const k in item) if (k !== GENERIC_KEYS[n++]) return false
  return (
    n === GENERIC_KEYS.length &&
    typeof item.meter === 'string' &&
    typeof item.recorded_at === 'string' &&
    isPlain(item.meter)
  )
}

/**
 * One readings row as a TabSeparated line (`readingsColumns`), written by hand: this runs for
 * every reading. A telegram's payload bytes go into the body as they are, between the row's
 * two pieces of text (its 2 KB are never copied into a row string first).
 */
export function writeReadingRow(
  out: BodyWriter,
  heads: RowHeads,
  r: RowOut,
  statusCarried: boolean,
): void {
  const head =
    `${heads.row}${r.kind}\t${r.recordedAt}\t${tsvNum(r.value)}\t${tsvOrNull(r.unit)}\t` +
    `${tsvNum(r.canonicalValue)}\t${tsvOrNull(r.canonicalUnit)}\t${tsvArray(r.flags)}\t`
  const status = !statusCarried
    ? ''
    : r.status
      ? `\t1\t${tsvArray(r.status.rawFlags)}\t${tsvArray(r.status.statuses)}`
      : '\t0\t[]\t[]'
  const tail = `\t${r.ingestedAt}\t${versionText(r.version)}${status}\n`
  const raw = r.rawTsv
  if (typeof raw === 'string') out.text(head + raw + tail)
  else if (raw instanceof Uint8Array) {
    out.text(head)
    out.bytes(raw)
    out.text(tail)
  } else
    out.text(
      `${head}{"meter":"${raw.identifier}","kind":"${r.kind}","value":${r.value},` +
        `"unit":"${r.unit}","recorded_at":"${raw.recordedAtText}"}${tail}`,
    )
}
