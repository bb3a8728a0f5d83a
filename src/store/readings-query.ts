// ClickHouse queries behind GET /readings: raw rows (one per reading identity) and the saldo
// series that derived consumption is computed from (its exchanges: exchanges.ts). Hourly and
// daily buckets are readings-buckets.ts, the filter both start from readings-filter.ts.
import type { Sql } from './sql.js'
import type { Kind } from '../domain/quality.js'
import { baseWhere, quote, timeCond, type Page, type RangeFilter } from './readings-filter.js'

export interface RawRow {
  meter_id: number
  kind: Kind
  value: number
  unit: string | null
  canonical_value: number | null
  canonical_unit: string | null
  quality_flags: string[]
  t: number
  /** Offset of the query zone at `t` in ms, when a zone was given. */
  off: number | null
}

/** Raw readings, oldest first, exactly one row per identity (FINAL picks the newest version). */
export async function rawReadings(
  sql: Sql,
  f: RangeFilter,
  tz: string | null,
  page: Page,
): Promise<{ rows: RawRow[]; total: number }> {
  const params: Record<string, unknown> = {}
  const where = `${baseWhere(f, params)} AND ${timeCond(f.from, f.to, true)}`
  const off = tz ? `, timeZoneOffset(toTimeZone(recorded_at, ${quote(tz)})) AS off` : ''
  const rows = await sql.query<Record<string, any>>(
    `SELECT meter_id, kind, value, unit, canonical_value, canonical_unit, quality_flags,
            toUnixTimestamp64Milli(recorded_at) AS t${off}, count() OVER () AS total
     FROM readings FINAL WHERE ${where}
     ORDER BY recorded_at, meter_id, kind LIMIT ${page.limit} OFFSET ${page.offset}`,
    params,
  )
  let total: number
  if (rows.length) total = Number(rows[0]!.total)
  else {
    const [c] = await sql.query<{ c: string }>(
      `SELECT count() AS c FROM readings FINAL WHERE ${where}`,
      params,
    )
    total = Number(c?.c ?? 0)
  }
  return {
    total,
    rows: rows.map((r) => ({
      meter_id: Number(r.meter_id),
      kind: r.kind,
      value: Number(r.value),
      unit: r.unit,
      canonical_value: r.canonical_value === null ? null : Number(r.canonical_value),
      canonical_unit: r.canonical_unit,
      quality_flags: r.quality_flags,
      t: Number(r.t),
      off: tz ? Number(r.off) * 1000 : null,
    })),
  }
}

/** Canonical saldo readings of one meter in [from, to], oldest first, one per identity. */
export async function saldoPoints(
  sql: Sql,
  ws: number,
  meterId: number,
  from: number,
  to: number,
): Promise<{
  points: { recordedAt: number; canonicalValue: number }[]
  canonicalUnit: string | null
}> {
  // The window's readings plus the last one before `from`: the interval crossing `from`
  // belongs to this window, the one holding its end (docs/derive.md, "Window").
  const cond = `workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND kind = 'saldo' AND canonical_value IS NOT NULL`
  const rows = await sql.query<{ t: string; v: number; u: string | null }>(
    `SELECT t, v, u FROM (
       SELECT toUnixTimestamp64Milli(recorded_at) AS t, canonical_value AS v, canonical_unit AS u
       FROM readings FINAL WHERE ${cond} AND ${timeCond(from, to, true)}
       UNION ALL
       SELECT * FROM (
         SELECT toUnixTimestamp64Milli(recorded_at) AS t, canonical_value AS v, canonical_unit AS u
         FROM readings FINAL
         WHERE ${cond} AND recorded_at < fromUnixTimestamp64Milli(toInt64(${Math.trunc(from)}), 'UTC')
         ORDER BY recorded_at DESC LIMIT 1
       )
     ) ORDER BY t`,
    { ws, m: meterId },
  )
  let unit: string | null = null
  const points = rows.map((r) => {
    unit ??= r.u
    return { recordedAt: Number(r.t), canonicalValue: Number(r.v) }
  })
  // A reading exactly at `from` starts the window: the interval ending there is the
  // previous window's.
  if (
    points.length > 1 &&
    points[1]!.recordedAt === Math.trunc(from) &&
    points[0]!.recordedAt < from
  )
    points.shift()
  return { points, canonicalUnit: unit }
}
