// SQL of the readings exports (docs/query.md "Exports"): ClickHouse writes the formats, with
// the API's field names. Instants are ISO 8601 strings in UTC as in the JSON answer (CSV,
// NDJSON) or Parquet timestamps (UTC-adjusted, milliseconds); local times are strings with
// their offset, exactly as `recorded_at_local` in JSON.
import type { Params } from './sql.js'
import { quote } from './readings-filter.js'

export type ExportFormat = 'csv' | 'ndjson' | 'parquet'

/** The ClickHouse output format and the settings that keep values as the JSON API has them. */
export const CLICKHOUSE_FORMAT: Record<ExportFormat, string> = {
  csv: 'CSVWithNames',
  ndjson: 'JSONEachRow',
  parquet: 'Parquet',
}
const SETTINGS =
  "SETTINGS output_format_json_quote_64bit_integers = 0, format_csv_null_representation = '', output_format_parquet_string_as_string = 1"

/** `t` (DateTime64(3, 'UTC')) as the API writes it: 2025-02-28T10:00:00.000Z. */
const isoUtc = (t: string) =>
  `concat(formatDateTime(${t}, '%Y-%m-%dT%H:%i:%S.', 'UTC'), leftPad(toString(toUnixTimestamp64Milli(${t}) % 1000), 3, '0'), 'Z')`

/** `t` as local wall time in `tz` with its offset: 2025-02-28T11:00:00.000+01:00. */
const isoLocal = (t: string, tz: string) => {
  const off = `timeZoneOffset(toTimeZone(${t}, ${quote(tz)}))`
  return `concat(formatDateTime(${t}, '%Y-%m-%dT%H:%i:%S.', ${quote(tz)}), leftPad(toString(toUnixTimestamp64Milli(${t}) % 1000), 3, '0'),
    if(${off} < 0, '-', '+'), leftPad(toString(intDiv(abs(${off}), 3600)), 2, '0'), ':', leftPad(toString(intDiv(abs(${off}) % 3600, 60)), 2, '0'))`
}

const FAMILY = (u: string) =>
  `transform(${u}, ['kwh', 'wh', 'm3', 'l'], ['kwh', 'kwh', 'm3', 'm3'], '')`

/**
 * A canonical value in display unit `du` (domain/units.ts fromCanonical: wh and l are × 1000,
 * rounded to 15 significant digits, so 1.1 m³ is 1100 l as in the JSON answer).
 */
const displayValue = (v: string, du: string) =>
  `if(${v} IS NULL, NULL, if(${du} IN ('wh', 'l'), toFloat64(printf('%.15g', ${v} * 1000)), ${v}))`

const instant = (t: string, fmt: ExportFormat) => (fmt === 'parquet' ? t : isoUtc(t))

export interface RawExportFilter {
  ws: number
  meterIds: number[]
  meterIdentifiers: string[]
  /** Per meter (same order): its display_unit, '' for none. */
  displayUnits: string[]
  kind: string | null
  from: number
  to: number
  tz: string | null
}

/** Raw Reading rows, oldest first, one per identity (FINAL), as GET /readings gives them. */
export function rawExportQuery(
  f: RawExportFilter,
  fmt: ExportFormat,
): { sql: string; params: Params } {
  const params: Params = {
    ws: f.ws,
    ids: f.meterIds,
    mids: f.meterIds,
    mnames: f.meterIdentifiers,
    mdu: f.displayUnits,
  }
  const where = ['workspace_id = {ws:UInt64}', 'meter_id IN {ids:Array(UInt64)}']
  if (f.kind) {
    params.kind = f.kind
    where.push('kind = {kind:String}')
  }
  where.push(
    `recorded_at >= fromUnixTimestamp64Milli(toInt64(${Math.trunc(f.from)}), 'UTC')`,
    `recorded_at <= fromUnixTimestamp64Milli(toInt64(${Math.trunc(f.to)}), 'UTC')`,
  )
  // null = clean, as in JSON; CSV joins flags with commas; Parquet keeps a list (empty = clean).
  // Inner columns are renamed so the output names (the API's) never alias themselves.
  // null = clean, as in JSON; CSV joins flags with commas; Parquet keeps a list (empty = clean).
  const flags =
    fmt === 'ndjson'
      ? "if(empty(qf), NULL, CAST(CAST(qf, 'Array(String)'), 'Variant(Array(String))'))"
      : fmt === 'csv'
        ? "if(empty(qf), NULL, arrayStringConcat(qf, ','))"
        : "CAST(qf, 'Array(String)')"
  const sql = `SELECT mid AS meter_id,
      transform(mid, {mids:Array(UInt64)}, {mnames:Array(String)}, '') AS meter_identifier,
      toString(k) AS kind, v AS value, u AS unit, cv AS canonical_value, cu AS canonical_unit,
      ${displayValue('cv', 'du')} AS display_value, du AS display_unit,
      ${flags} AS quality_flags,
      ${instant('t', fmt)} AS recorded_at${f.tz ? `,\n      ${isoLocal('t', f.tz)} AS recorded_at_local` : ''}
    FROM (SELECT *,
            -- The meter's display_unit where it is of the value's family (domain/units.ts).
            transform(mid, {mids:Array(UInt64)}, {mdu:Array(String)}, '') AS du0,
            if(cv IS NULL, NULL, if(du0 != '' AND (cu IS NULL OR ${FAMILY('du0')} = cu), du0, cu)) AS du
          FROM (SELECT meter_id AS mid, kind AS k, value AS v, unit AS u, canonical_value AS cv,
                       canonical_unit AS cu, quality_flags AS qf, recorded_at AS t
                FROM readings FINAL WHERE ${where.join(' AND ')}))
    ORDER BY t, mid, k
    ${SETTINGS}`
  return { sql, params }
}

/** Aggregate bucket rows of a plan (store/readings-buckets.ts), in the JSON answer's order. */
export function aggregateExportQuery(
  /** store/readings-buckets.ts aggregatePlan: the exact bucket query (columns meter_id, kind, b, c, s, lo, hi). */
  plan: { grouped: string; params: Params; zone: string },
  meterIds: number[],
  displayUnits: string[],
): { sql: string; params: Params } {
  const d = (v: string) => displayValue(v, 'du')
  return {
    sql: `SELECT formatDateTime(b, '%Y-%m-%d %H:%i:%S', ${plan.zone}) AS bucket_start, mid AS meter_id,
        toString(k) AS kind, c AS reading_count, s AS sum, lo AS min, hi AS max, s / c AS avg,
        du AS display_unit, ${d('s')} AS display_sum, ${d('lo')} AS display_min,
        ${d('hi')} AS display_max, ${d('s / c')} AS display_avg
      FROM (SELECT meter_id AS mid, kind AS k, b, c, s, lo, hi,
                   nullIf(transform(meter_id, {xmids:Array(UInt64)}, {xmdu:Array(String)}, ''), '') AS du
            FROM (${plan.grouped}))
      ORDER BY b, mid, k
      ${SETTINGS}`,
    params: { ...plan.params, xmids: meterIds, xmdu: displayUnits },
  }
}

/**
 * Derived consumption rows (computed in the service from one meter's saldo readings) handed
 * to ClickHouse as JSONEachRow to be written in the export format.
 */
export function derivedExportQuery(
  /** Derived rows as the JSON answer has them (api/readings-export.ts). */
  rows: object[],
  local: boolean,
  fmt: ExportFormat,
): { sql: string; params: Params } {
  const cols = [
    'period_start String',
    'period_end String',
    'consumption Nullable(Float64)',
    'unit Nullable(String)',
    'gap Bool',
    'rollover Bool',
    'exchange Bool',
    'unknown Bool',
    'interpolated Bool',
    'display_consumption Nullable(Float64)',
    'display_unit Nullable(String)',
    ...(local ? ['period_start_local String', 'period_end_local String'] : []),
  ]
  // Input columns are prefixed so the output names never alias themselves.
  const structure = cols.map((c) => `x_${c}`).join(', ')
  const select = cols.map((c) => {
    const name = c.split(' ')[0]!
    const instantCol = name === 'period_start' || name === 'period_end'
    return fmt === 'parquet' && instantCol
      ? `parseDateTime64BestEffort(x_${name}, 3, 'UTC') AS ${name}`
      : `x_${name} AS ${name}`
  })
  const input = rows.map((r) =>
    JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [`x_${k}`, v]))),
  )
  return {
    sql: `SELECT ${select.join(', ')}
      FROM format(JSONEachRow, ${quote(structure)}, {rows:String})
      ${SETTINGS}`,
    params: { rows: input.join('\n') },
  }
}
