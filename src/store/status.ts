// Latest device status per meter, derived from the status reports themselves (no second
// copy to keep in step).
//
// Embedded engine: a status report rides on the readings row of its item (migration 13), so
// one INSERT stores both, and the rollup feed's second view writes it to `status_reports`
// (rollup-feed.ts). Every reader here first waits until no status handed in is pending
// (`statusCurrent`); a kill in between is repaired at the next start
// (`restoreStatusMissedByACrash`). A ClickHouse server gets its own INSERT of them.
import { LAST_INGESTS } from './crash-window.js'
import { meterReadFilter, recentFirst } from './recent-first.js'
import { ROLLUP_FEED, statusCurrent } from './rollup-feed.js'
import { isoFromCh, type SchemaOptions, type Sql } from './sql.js'

/**
 * DDL of migration 13 (embedded engine): the status columns of `readings` and of the feed,
 * and the view that writes the reports the feed carries.
 */
export function statusFeedStatements(o: SchemaOptions): string[] {
  if (!o.rollupFeed) return []
  const columns = `ADD COLUMN IF NOT EXISTS has_status UInt8 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS status_raw_flags Array(String),
    ADD COLUMN IF NOT EXISTS status_codes Array(LowCardinality(String))`
  return [
    `ALTER TABLE readings ${columns}`,
    `ALTER TABLE ${ROLLUP_FEED} ADD COLUMN IF NOT EXISTS version UInt64, ${columns}`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS status_reports_feed_mv TO status_reports AS
       SELECT workspace_id, meter_id, recorded_at AS reported_at, status_raw_flags AS raw_flags,
              status_codes AS statuses, version
       FROM ${ROLLUP_FEED} WHERE has_status = 1`,
  ]
}

/**
 * After an unclean stop of the embedded engine: the status reports that rode on readings
 * rows stored in the last minutes of ingest but never reached `status_reports` (killed
 * before the feed wrote them) are written from those rows. Returns how many.
 */
export async function restoreStatusMissedByACrash(sql: Sql): Promise<number> {
  const carried = `SELECT workspace_id, meter_id, recorded_at AS reported_at,
      status_raw_flags AS raw_flags, status_codes AS statuses, version
    FROM readings WHERE has_status = 1 AND ${LAST_INGESTS}`
  const missing = `SELECT c.* FROM (${carried}) AS c
    LEFT ANTI JOIN (
      SELECT workspace_id, meter_id, reported_at, version FROM status_reports
      WHERE (workspace_id, meter_id) IN (SELECT workspace_id, meter_id FROM (${carried}))
    ) AS s ON c.workspace_id = s.workspace_id AND c.meter_id = s.meter_id
      AND c.reported_at = s.reported_at AND c.version = s.version`
  const [c] = await sql.query<{ n: string }>(`SELECT count() AS n FROM (${missing})`)
  const n = Number(c?.n ?? 0)
  if (n > 0)
    await sql.exec(
      `INSERT INTO status_reports (workspace_id, meter_id, reported_at, raw_flags, statuses, version) ${missing}`,
    )
  return n
}

export interface LatestStatus {
  statuses: string[]
  reported_at: string
}

export async function latestStatuses(
  sql: Sql,
  ws: number,
  meterIds?: number[],
  /** Only reports from this time on (epoch ms): a meter with none since is not in the map. */
  since?: number,
): Promise<Map<number, LatestStatus>> {
  await statusCurrent(sql)
  const f = meterReadFilter('reported_at', meterIds, since)
  const rows = await sql.query<{ meter_id: string; statuses: string[]; at: string }>(
    `SELECT meter_id, argMax(statuses, reported_at) AS statuses, max(reported_at) AS at
     FROM status_reports WHERE workspace_id = {ws:UInt64}${f.where} GROUP BY meter_id`,
    { ws, ...f.params },
  )
  const out = new Map<number, LatestStatus>()
  for (const r of rows)
    out.set(Number(r.meter_id), { statuses: r.statuses, reported_at: isoFromCh(r.at)! })
  return out
}

/**
 * The latest status report of each of `ids` that has one (and of other meters reported in the
 * last week), reading the last week first (recent-first.ts).
 */
export function latestStatusesOf(
  sql: Sql,
  ws: number,
  ids: readonly number[],
  now: number,
): Promise<Map<number, LatestStatus>> {
  return recentFirst(ids, now, (i, since) => latestStatuses(sql, ws, i, since))
}

export interface StatusReportRow {
  meter_id: number
  raw_flags: string[]
  statuses: string[]
  reported_at: string
}

/**
 * One page of status reports of these meters in [from, to] (epoch ms, inclusive), newest
 * first, and the total across pages.
 */
export async function pageStatusReports(
  sql: Sql,
  q: { ws: number; meterIds: number[]; from: number; to: number; page: number; perPage: number },
): Promise<{ rows: StatusReportRow[]; total: number }> {
  await statusCurrent(sql)
  const where = `workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)}
    AND reported_at >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
    AND reported_at <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')`
  const params = { ws: q.ws, ids: q.meterIds, from: Math.trunc(q.from), to: Math.trunc(q.to) }
  const rows = await sql.query<{
    meter_id: string
    raw_flags: string[]
    statuses: string[]
    reported_at: string
    total: string
  }>(
    `SELECT meter_id, raw_flags, statuses, reported_at, count() OVER () AS total
     FROM status_reports FINAL WHERE ${where}
     ORDER BY reported_at DESC, meter_id LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
    { ...params, limit: q.perPage, offset: (q.page - 1) * q.perPage },
  )
  let total = rows.length ? Number(rows[0]!.total) : 0
  if (!rows.length && q.page > 1) {
    // Past the last page the window count has no row to ride on.
    const [c] = await sql.query<{ c: string }>(
      `SELECT count() AS c FROM status_reports FINAL WHERE ${where}`,
      params,
    )
    total = Number(c?.c ?? 0)
  }
  return {
    rows: rows.map((r) => ({
      meter_id: Number(r.meter_id),
      raw_flags: r.raw_flags,
      statuses: r.statuses,
      reported_at: isoFromCh(r.reported_at)!,
    })),
    total,
  }
}

/**
 * Takes back status reports written for a turn whose readings could not be stored, by their
 * exact versions (other versions of the same reports stay).
 */
export async function deleteStatusVersions(
  sql: Sql,
  ws: number,
  meterId: number,
  versions: number[],
): Promise<void> {
  await sql.exec(
    'DELETE FROM status_reports WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND version IN {v:Array(UInt64)}',
    { ws, m: meterId, v: versions },
  )
}
