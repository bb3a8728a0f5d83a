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
