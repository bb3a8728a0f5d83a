// Latest device status per meter, derived from the status reports themselves (no second
// copy to keep in step).
import { isoFromCh, type Sql } from './sql.js'

export interface LatestStatus {
  statuses: string[]
  reported_at: string
}

export async function latestStatuses(
  sql: Sql,
  ws: number,
  meterIds?: number[],
): Promise<Map<number, LatestStatus>> {
  const filter = meterIds ? 'AND meter_id IN {ids:Array(UInt64)}' : ''
  const rows = await sql.query<{ meter_id: string; statuses: string[]; at: string }>(
    `SELECT meter_id, argMax(statuses, reported_at) AS statuses, max(reported_at) AS at
     FROM status_reports WHERE workspace_id = {ws:UInt64} ${filter} GROUP BY meter_id`,
    meterIds ? { ws, ids: meterIds } : { ws },
  )
  const out = new Map<number, LatestStatus>()
  for (const r of rows)
    out.set(Number(r.meter_id), { statuses: r.statuses, reported_at: isoFromCh(r.at)! })
  return out
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
