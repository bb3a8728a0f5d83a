// The transport-neutral face of ClickHouse: both adapters (embedded chDB and a ClickHouse
// server) speak the same SQL with `{name:Type}` parameters and JSONEachRow results, so
// everything above this file is written once.

/** How the DDL is built: single node, or Replicated + Distributed tables on `cluster`. */
export interface SchemaOptions {
  cluster?: string
  /** The rollup is fed apart from the readings INSERT (rollup-feed.ts); set by `migrate`. */
  rollupFeed?: boolean
}

export type Params = Record<string, unknown>

export interface InsertOptions {
  /**
   * The rows are TabSeparated lines of these columns, in this order; without it they are
   * JSONEachRow lines. The readings writer uses TabSeparated: ClickHouse parses it for less
   * than JSON, most of all a raw payload, which JSON carries as an escaped string
   * (docs/benchmarks.md).
   */
  columns?: readonly string[]
  /**
   * The rows are RowBinary of `columns` instead of TabSeparated: the rollup feed's rows
   * (feed-rows.ts), which the embedded engine reads from a file only.
   */
  binary?: boolean
  /** Fields the table has no column for are skipped (the rollup feed reads readings rows). */
  skipUnknownFields?: boolean
  /**
   * Duplicates of a sorting key within this INSERT are left for merges to collapse
   * (`optimize_on_insert = 0`): for ReplacingMergeTree tables that are read only under
   * FINAL, argMax or GROUP BY, so collapsing them while writing is work done twice. Readings
   * rows at 4,000 per INSERT: ~20 % less chDB CPU per row (docs/benchmarks.md).
   */
  collapseInMerges?: boolean
}

/** The column list of an INSERT made with `opts` (` (a, b)`), or '' for all columns. */
export const insertColumns = (opts: InsertOptions) =>
  opts.columns ? ` (${opts.columns.join(', ')})` : ''

/** The input format of an INSERT made with `opts`. */
export const insertFormat = (opts: InsertOptions) =>
  opts.columns
    ? opts.binary
      ? ('RowBinary' as const)
      : ('TabSeparated' as const)
    : ('JSONEachRow' as const)

/**
 * ClickHouse settings of an INSERT, the same for both transports. A JSON object in a String
 * column is stored as its text (raw payloads are embedded unescaped, saving a second
 * encoding pass per reading).
 */
export function insertSettings(opts: InsertOptions): Record<string, 0 | 1> {
  return {
    ...(opts.columns ? {} : { input_format_json_read_objects_as_strings: 1 }),
    ...(opts.skipUnknownFields ? { input_format_skip_unknown_fields: 1 } : {}),
    ...(opts.collapseInMerges ? { optimize_on_insert: 0 } : {}),
  }
}

/** A JSON value for a nullable String column, in a JSONEachRow line written by hand. */
export const jsonOrNull = (v: string | null) => (v === null ? 'null' : JSON.stringify(v))

/** A JSON value for a nullable number column; a non-finite number is null, as in JSON.stringify. */
export const numOrNull = (v: number | null) =>
  v === null || !Number.isFinite(v) ? 'null' : String(v)

// TabSeparated fields written by hand. A String field is its text with backslash, tab and
// newline escaped; `\N` is NULL. An array field is not escaped as a field: ClickHouse reads
// `['a','b']` with each element a quoted literal (backslash and quote escaped, and tab and
// newline too, so that no row spans two lines).
const TSV_SPECIAL = /[\\\t\n]/
const TSV_SPECIAL_ALL = /[\\\t\n]/g
const QUOTED_SPECIAL = /[\\'\t\n]/
const QUOTED_SPECIAL_ALL = /[\\'\t\n]/g
const ESCAPES: Record<string, string> = { '\\': '\\\\', "'": "\\'", '\t': '\\t', '\n': '\\n' }
const escape = (c: string) => ESCAPES[c]!

/** A String field: `s` with backslash, tab and newline escaped. */
export const tsvText = (s: string) => (TSV_SPECIAL.test(s) ? s.replace(TSV_SPECIAL_ALL, escape) : s)

/** A nullable String field. */
export const tsvOrNull = (v: string | null) => (v === null ? '\\N' : tsvText(v))

/** A nullable number field; a non-finite number is NULL. */
export const tsvNum = (v: number | null) => (v === null || !Number.isFinite(v) ? '\\N' : String(v))

let versionHigh = NaN
let versionHighText = ''

/**
 * A row version (a non-negative integer below 2^53: microseconds since the epoch, HLC) as
 * text, as String(v) writes it. V8 writes such a number through its general double printer
 * (~80 ns; the row's line with it was a third of `writeReadingRow`'s time in a service
 * profile); here its digits above the last six, which change once a second, are kept, and
 * the last six are written as a small integer (~35 ns).
 */
export function versionText(v: number): string {
  const high = Math.floor(v / 1e6)
  if (high === 0) return String(v)
  if (high !== versionHigh) {
    versionHigh = high
    versionHighText = String(high)
  }
  return versionHighText + String(1e6 + (v - high * 1e6)).slice(1)
}

/** An Array(String) field. */
export function tsvArray(items: readonly string[]): string {
  if (items.length === 0) return '[]'
  let s = '['
  for (let i = 0; i < items.length; i++) {
    const t = items[i]!
    s +=
      (i ? ",'" : "'") + (QUOTED_SPECIAL.test(t) ? t.replace(QUOTED_SPECIAL_ALL, escape) : t) + "'"
  }
  return s + ']'
}

/**
 * The rows of one INSERT: text, UTF-8 bytes, or UTF-8 bytes in pieces (in order), which a
 * transport hands on one after another instead of joining them first (a telegram INSERT's
 * body is megabytes: one copy less of it per INSERT; docs/benchmarks.md).
 */
export type InsertBody = string | Uint8Array | readonly Uint8Array[]

/** An INSERT body as its byte pieces, in order (text encoded once, bytes not copied). */
export function bodyParts(body: InsertBody): readonly Uint8Array[] {
  if (typeof body === 'string') return body ? [Buffer.from(body)] : []
  return body instanceof Uint8Array ? [body] : body
}

/** Bytes in all the pieces. */
export function bodySize(parts: readonly Uint8Array[]): number {
  let n = 0
  for (const p of parts) n += p.byteLength
  return n
}

/** The pieces as one Buffer: a copy only where there are several. */
export function joinBody(parts: readonly Uint8Array[]): Buffer {
  if (parts.length === 1) {
    const p = parts[0]!
    return Buffer.isBuffer(p) ? p : Buffer.from(p.buffer, p.byteOffset, p.byteLength)
  }
  return Buffer.concat(parts)
}

export interface Sql {
  /** Runs a SELECT and returns its rows (JSONEachRow; 64-bit integers arrive as strings). */
  query<T = Record<string, unknown>>(sql: string, params?: Params): Promise<T[]>
  /** Runs a statement without a result (DDL, ALTER, lightweight DELETE). */
  exec(sql: string, params?: Params): Promise<void>
  /**
   * Inserts rows given as JSONEachRow (one JSON object per line), or as TabSeparated lines
   * of `opts.columns`. A JSON object given for a String column is stored as its JSON text.
   */
  insert(table: string, rows: InsertBody, opts?: InsertOptions): Promise<void>
  /**
   * Runs a SELECT and yields its result as bytes in a ClickHouse output format (CSVWithNames,
   * JSONEachRow, Parquet, ...) chunk by chunk, so exports never hold the whole result.
   * Stopping the iteration early cancels the query.
   */
  stream(sql: string, params: Params, format: string): AsyncIterable<Uint8Array>
  close(): Promise<void>
  readonly kind: 'chdb' | 'server'
}

const DAY_MS = 86_400_000
// Two days cached: the ingest path formats a reading's day and today's (ingested_at) in
// turn, and one slot missed on every call (5 % of the ingest thread in a profile).
let cachedDay = NaN
let cachedDate = ''
let otherDay = NaN
let otherDate = ''
// The last time formatted: a gateway's request often carries one recorded_at for all its
// meters (interval meters report on the quarter hour), each formatted for its row.
let lastMs = NaN
let lastText = ''
const pad2 = (n: number) => (n < 10 ? '0' + n : String(n))
const pad3 = (n: number) => (n < 10 ? '00' + n : n < 100 ? '0' + n : String(n))

/**
 * Formats a Date or epoch ms as ClickHouse DateTime64(3) text in UTC
 * (`2026-11-22 06:45:00.123`). Runs for every stored reading, so the date part is cached
 * and the time of day is formatted by hand.
 */
export function chTime(t: Date | number): string {
  const ms = typeof t === 'number' ? t : t.getTime()
  if (ms === lastMs) return lastText
  const day = Math.floor(ms / DAY_MS)
  if (day !== cachedDay) {
    const d = otherDay
    const text = otherDate
    otherDay = cachedDay
    otherDate = cachedDate
    cachedDay = day
    cachedDate = d === day ? text : new Date(day * DAY_MS).toISOString().slice(0, 10) + ' '
  }
  let r = ms - day * DAY_MS
  const milli = r % 1000
  r = (r - milli) / 1000
  const sec = r % 60
  r = (r - sec) / 60
  const min = r % 60
  lastMs = ms
  lastText =
    cachedDate + pad2((r - min) / 60) + ':' + pad2(min) + ':' + pad2(sec) + '.' + pad3(milli)
  return lastText
}

/** Parses ClickHouse DateTime64 text (UTC) back to epoch ms. */
export function parseChTime(s: string): number {
  return Date.parse(s.replace(' ', 'T') + 'Z')
}

/** ClickHouse DateTime64 text → ISO 8601 with `Z`. */
export function isoFromCh(s: string | null): string | null {
  return s === null ? null : new Date(parseChTime(s)).toISOString()
}

export function toJsonEachRow(rows: readonly object[]): string {
  let out = ''
  for (const r of rows) out += JSON.stringify(r) + '\n'
  return out
}
