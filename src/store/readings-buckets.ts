// Hourly and daily buckets of GET /readings and of its exports: whole hours from the rollup,
// dirty and part-covered hours (and zones without whole-hour offsets) from the raw readings,
// so that each reading is counted exactly once (docs/query.md).
import type { Sql } from './sql.js'
import { ROLLUP_TABLE } from './rollup.js'
import { rollupCurrent } from './rollup-feed.js'
import { wholeHourZone } from '../domain/time.js'
import type { Kind } from '../domain/quality.js'
import { baseWhere, quote, timeCond, type Page, type RangeFilter } from './readings-filter.js'

const HOUR = 3_600_000
/** Dirty hours named in one query at most (≈ 20 bytes each, twice, under max_query_size). */
export const MAX_DIRTY_HOURS = 5000
/** Up to this many (meter × hour) keys the dirty check groups every hour directly. */
const PLAIN_CHECK_HOURS = 50_000

export interface BucketRow {
  bucket_start: string
  bucket_epoch: number
  meter_id: number
  kind: Kind
  reading_count: number
  sum: number
  min: number
  max: number
  avg: number
}

/**
 * Hourly or daily buckets over canonical values. Whole UTC hours inside the range come from
 * the rollup unless dirty (an identity inserted more than once there); dirty hours, the
 * partly covered first and last hour, and every hour of a zone without whole-hour offsets
 * come from the raw readings with FINAL. So each reading is counted exactly once.
 */
export async function aggregateReadings(
  sql: Sql,
  f: RangeFilter,
  bucket: 'hourly' | 'daily',
  tz: string | null,
  page: Page,
): Promise<Aggregated> {
  return (await aggregate(sql, f, bucket, tz, page)) as Aggregated
}

/**
 * The query of every bucket of the range, exact as aggregateReadings (dirty hours already
 * looked up), for exports that stream it: columns meter_id, kind, b (bucket start,
 * DateTime UTC), c (reading count), s, lo, hi; `zone` is the quoted bucket zone.
 */
export interface AggregatePlan {
  grouped: string
  params: Record<string, unknown>
  zone: string
}

export async function aggregatePlan(
  sql: Sql,
  f: RangeFilter,
  bucket: 'hourly' | 'daily',
  tz: string | null,
): Promise<AggregatePlan> {
  return (await aggregate(sql, f, bucket, tz, null)) as AggregatePlan
}

type Aggregated = { rows: BucketRow[]; total: number; dirtyHours: number; rollup: boolean }

/** What every step of an aggregation shares: the zone, the filter and the whole hours. */
interface Shape {
  f: RangeFilter
  zone: string
  params: Record<string, unknown>
  where: string
  /** Whole hours [h0, h1) inside [from, to] that the rollup may answer. */
  h0: number
  h1: number
  /** The rollup rows of [h0, h1). */
  inRange: string
  /** Bucket start from a rollup hour / from a raw reading's time. */
  outFromHour: string
  outFromRaw: string
  /** The rollup may answer the whole hours (no zone with a part-hour offset, some hours). */
  rollupRange: boolean
  /** Few hours (one meter × a year is 8,760): a plain GROUP BY is cheaper than the part look-up. */
  plainCheck: boolean
}

/** A dirty hour: its (meter, kind, hour) code and the hour (epoch seconds). */
type DirtyHour = { code: string; b: number }

// Dirty hours travel as one UInt64 each: (meter_id * 4 + kind) * 2^32 + hours since epoch.
const hourCode = (b: string) =>
  `(meter_id * 4 + CAST(kind, 'UInt8')) * 4294967296 + intDiv(toUnixTimestamp(${b}), 3600)`

function shapeOf(f: RangeFilter, bucket: 'hourly' | 'daily', tz: string | null): Shape {
  const zone = quote(tz ?? 'UTC')
  // Whole hours [h0, h1) lie inside [from, to]; `to` is inclusive.
  const h0 =
    Math.ceil(Math.max(f.from, f.rawBefore !== undefined ? f.rawBefore + HOUR : -Infinity) / HOUR) *
    HOUR
  const h1 = Math.floor((f.to + 1) / HOUR) * HOUR
  const params: Record<string, unknown> = {}
  const where = baseWhere(f, params)
  return {
    f,
    zone,
    params,
    where,
    h0,
    h1,
    inRange: `${where} AND bucket >= toDateTime(${h0 / 1000}, 'UTC') AND bucket < toDateTime(${h1 / 1000}, 'UTC')`,
    outFromHour: bucket === 'hourly' ? 'bucket' : `toStartOfDay(bucket, ${zone})`,
    outFromRaw:
      bucket === 'hourly'
        ? `toDateTime(toStartOfHour(recorded_at, ${zone}), 'UTC')`
        : `toDateTime(toStartOfDay(recorded_at, ${zone}), 'UTC')`,
    rollupRange: (tz === null || wholeHourZone(tz, f.from, f.to)) && h0 < h1,
    plainCheck:
      f.partsAware === false ||
      f.meterIds.length * ((h1 - h0) / HOUR) <= (f.plainCheckHours ?? PLAIN_CHECK_HOURS),
  }
}

/** The part-hour edges of the range, read from the raw readings. */
function edgeConds(s: Shape): string[] {
  const edges: string[] = []
  if (s.f.from < s.h0) edges.push(`(${timeCond(s.f.from, Math.min(s.h0, s.f.to + 1), false)})`)
  if (s.h1 <= s.f.to) edges.push(`(${timeCond(s.h1, s.f.to, true)})`)
  return edges
}

async function aggregate(
  sql: Sql,
  f: RangeFilter,
  bucket: 'hourly' | 'daily',
  tz: string | null,
  page: Page | null,
): Promise<Aggregated | AggregatePlan> {
  // Every stored reading is counted in the rollup before it is read.
  await rollupCurrent(sql)
  const s = shapeOf(f, bucket, tz)
  if (s.rollupRange && s.plainCheck && page !== null && page.offset === 0) {
    const clean = await optimisticPage(sql, s, page)
    if (clean) return clean
  }
  let dirty: DirtyHour[] = []
  let rollupRange = s.rollupRange
  if (rollupRange) {
    dirty = await dirtyHours(sql, s)
    // Too many dirty hours to name in a query: read the whole range from the raw readings.
    if (dirty.length > MAX_DIRTY_HOURS) rollupRange = false
  }
  const parts = exactSources(s, rollupRange, dirty)
  if (page === null)
    return {
      grouped: `SELECT meter_id, kind, b, sum(c) AS c, sum(s) AS s, min(lo) AS lo, max(hi) AS hi
                FROM (${parts.join(' UNION ALL ')}) GROUP BY meter_id, kind, b HAVING c > 0`,
      params: s.params,
      zone: s.zone,
    }
  const { rows, total } = await bucketPage(sql, s, parts, page)
  return { total, dirtyHours: dirty.length, rollup: rollupRange, rows }
}

/**
 * Optimistic: one query checks every hour and aggregates it; the usual answer (no dirty
 * hour) is final, null otherwise. Any dirty hour discards it for the two-step path (which
 * then recomputes those hours from the raw readings): one rollup read instead of two.
 */
async function optimisticPage(sql: Sql, s: Shape, page: Page): Promise<Aggregated | null> {
  const edges = edgeConds(s)
  const src = [
    `SELECT meter_id, kind, toDateTime(${s.outFromHour}, 'UTC') AS b, c, s, lo, hi, d
     FROM (SELECT meter_id, kind, bucket, toUInt64(sum(cnt)) AS c, toFloat64(sum(total)) AS s,
                  CAST(min(mn), 'Nullable(Float64)') AS lo, CAST(max(mx), 'Nullable(Float64)') AS hi,
                  toUInt64(sum(rows) != groupBitmapMerge(ids)) AS d
           FROM ${ROLLUP_TABLE} WHERE ${s.inRange} GROUP BY meter_id, kind, bucket)`,
  ]
  if (edges.length)
    src.push(
      `SELECT meter_id, kind, ${s.outFromRaw} AS b, toUInt64(1) AS c, toFloat64(assumeNotNull(canonical_value)) AS s,
              CAST(canonical_value, 'Nullable(Float64)') AS lo, CAST(canonical_value, 'Nullable(Float64)') AS hi,
              toUInt64(0) AS d
       FROM readings FINAL
       WHERE ${s.where} AND canonical_value IS NOT NULL AND (${edges.join(' OR ')})`,
    )
  const rows = await sql.query<Record<string, any>>(
    `SELECT meter_id, kind, toUnixTimestamp(b) AS epoch, formatDateTime(b, '%Y-%m-%d %H:%i:%S', ${s.zone}) AS label,
            c, s, lo, hi, countIf(c > 0) OVER () AS total, sum(d) OVER () AS dirty
     FROM (SELECT meter_id, kind, b, sum(c) AS c, sum(s) AS s, min(lo) AS lo, max(hi) AS hi, sum(d) AS d
           FROM (${src.join(' UNION ALL ')}) GROUP BY meter_id, kind, b HAVING c > 0 OR d > 0)
     ORDER BY b, meter_id, kind LIMIT ${page.limit}`,
    s.params,
  )
  if (rows.length && Number(rows[0]!.dirty) !== 0) return null
  return {
    total: rows.length ? Number(rows[0]!.total) : 0,
    dirtyHours: 0,
    rollup: true,
    rows: rows.map(bucketRow),
  }
}

/** Rollup hours whose rows may count a reading twice (replays, versions not yet merged). */
async function dirtyHours(sql: Sql, s: Shape): Promise<DirtyHour[]> {
  // Only two kinds of physical rollup rows can hide a duplicate: a row whose own identity set
  // is smaller than its row count, and rows of a key that also has rows in another part (not
  // yet merged). Within one part a key is one row (merged on insert and on merge), so keys
  // present only in the largest part of their partition need no GROUP BY: that keeps the
  // check near a plain read instead of a hash aggregation over every hour.
  const suspect = s.plainCheck
    ? ''
    : `AND (rows != bitmapCardinality(ids) OR (meter_id, kind, bucket) IN (
       SELECT meter_id, kind, bucket FROM ${ROLLUP_TABLE} WHERE ${s.inRange} AND _part NOT IN (
         SELECT argMax(name, rows) FROM system.parts
         WHERE database = currentDatabase() AND table = '${ROLLUP_TABLE}' AND active GROUP BY partition)))`
  const rows = await sql.query<{ c: string; b: number }>(
    `SELECT toString(${hourCode('bucket')}) AS c, toUnixTimestamp(bucket) AS b FROM ${ROLLUP_TABLE}
     WHERE ${s.inRange} ${suspect}
     GROUP BY meter_id, kind, bucket HAVING sum(rows) != groupBitmapMerge(ids)`,
    s.params,
  )
  return rows.map((r) => ({ code: r.c, b: Number(r.b) }))
}

/**
 * The exact sources of every bucket: clean rollup hours, dirty hours recomputed from the
 * raw readings, and the part-hour edges (or the whole range raw, without the rollup).
 */
function exactSources(s: Shape, rollupRange: boolean, dirty: DirtyHour[]): string[] {
  const parts: string[] = []
  const rawConds: string[] = []
  if (rollupRange) {
    const dirtyList = dirty.map((d) => d.code).join(',')
    parts.push(
      `SELECT meter_id, kind, toDateTime(${s.outFromHour}, 'UTC') AS b, toUInt64(cnt) AS c, toFloat64(total) AS s,
              CAST(mn, 'Nullable(Float64)') AS lo, CAST(mx, 'Nullable(Float64)') AS hi
       FROM ${ROLLUP_TABLE}
       WHERE ${s.inRange}
       ${dirty.length ? `AND ${hourCode('bucket')} NOT IN (${dirtyList})` : ''}`,
    )
    rawConds.push(...edgeConds(s))
    if (dirty.length) {
      // Dirty hours: newest version per identity without FINAL, so the hour filter (key
      // columns only) runs as PREWHERE and other columns are read for those hours alone.
      const lo = Math.min(...dirty.map((d) => d.b)) * 1000
      const hi = Math.max(...dirty.map((d) => d.b)) * 1000 + HOUR
      const outFromRawTs = s.outFromRaw.replaceAll('recorded_at', 't')
      parts.push(
        `SELECT meter_id, kind, ${outFromRawTs} AS b, toUInt64(1) AS c, toFloat64(assumeNotNull(v)) AS s,
                CAST(v, 'Nullable(Float64)') AS lo, CAST(v, 'Nullable(Float64)') AS hi
         FROM (SELECT meter_id, kind, recorded_at AS t, argMax(tuple(canonical_value), version).1 AS v FROM readings
               WHERE ${s.where} AND ${timeCond(lo, hi, false)} AND ${hourCode('recorded_at')} IN (${dirtyList})
               GROUP BY meter_id, kind, recorded_at)
         WHERE v IS NOT NULL`,
      )
    }
  } else rawConds.push(`(${timeCond(s.f.from, s.f.to, true)})`)
  if (rawConds.length)
    parts.push(
      `SELECT meter_id, kind, ${s.outFromRaw} AS b, toUInt64(1) AS c, toFloat64(assumeNotNull(canonical_value)) AS s,
              CAST(canonical_value, 'Nullable(Float64)') AS lo, CAST(canonical_value, 'Nullable(Float64)') AS hi
       FROM readings FINAL
       WHERE ${s.where} AND canonical_value IS NOT NULL AND (${rawConds.join(' OR ')})`,
    )
  return parts
}

/** One page of buckets from the exact sources, with the total count of buckets. */
async function bucketPage(
  sql: Sql,
  s: Shape,
  parts: string[],
  page: Page,
): Promise<{ rows: BucketRow[]; total: number }> {
  const rows = await sql.query<Record<string, any>>(
    `SELECT meter_id, kind, toUnixTimestamp(b) AS epoch, formatDateTime(b, '%Y-%m-%d %H:%i:%S', ${s.zone}) AS label,
            c, s, lo, hi, count() OVER () AS total
     FROM (SELECT meter_id, kind, b, sum(c) AS c, sum(s) AS s, min(lo) AS lo, max(hi) AS hi
           FROM (${parts.join(' UNION ALL ')}) GROUP BY meter_id, kind, b HAVING c > 0)
     ORDER BY b, meter_id, kind LIMIT ${page.limit} OFFSET ${page.offset}`,
    s.params,
  )
  let total = rows.length ? Number(rows[0]!.total) : 0
  if (!rows.length && page.offset > 0) {
    // Past the last page: the window count is not there to read.
    const [c] = await sql.query<{ c: string }>(
      `SELECT count() AS c FROM (SELECT meter_id, kind, b, sum(c) AS c FROM (${parts.join(' UNION ALL ')})
       GROUP BY meter_id, kind, b HAVING c > 0)`,
      s.params,
    )
    total = Number(c?.c ?? 0)
  }
  return { rows: rows.map(bucketRow), total }
}

function bucketRow(r: Record<string, any>): BucketRow {
  const c = Number(r.c)
  const s = Number(r.s)
  return {
    bucket_start: r.label,
    bucket_epoch: Number(r.epoch),
    meter_id: Number(r.meter_id),
    kind: r.kind,
    reading_count: c,
    sum: s,
    min: Number(r.lo),
    max: Number(r.hi),
    avg: s / c,
  }
}
