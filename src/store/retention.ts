// Retention pruning of one workspace (operator-api.md "Decisions"): readings older than the
// cut-off by `recorded_at`, status reports by `reported_at`, and the rollup of those hours.
import { deleteRollup } from './rollup.js'
import { chTime } from './sql.js'
import type { Store } from './store.js'

/** Deletes what is older than `cutoff` (epoch ms); returns the distinct rows it removed. */
export async function pruneWorkspace(store: Store, ws: number, cutoff: number): Promise<number> {
  const p = { ws, cutoff: chTime(cutoff) }
  // Every stored version of one reading counts as one row.
  const [r] = await store.sql.query<{ c: string }>(
    `SELECT
       (SELECT count() FROM (SELECT 1 FROM readings WHERE workspace_id = {ws:UInt64} AND recorded_at < {cutoff:DateTime64(3, 'UTC')} GROUP BY meter_id, kind, recorded_at))
     + (SELECT count() FROM (SELECT 1 FROM status_reports WHERE workspace_id = {ws:UInt64} AND reported_at < {cutoff:DateTime64(3, 'UTC')} GROUP BY meter_id, reported_at)) AS c`,
    p,
  )
  const n = Number(r?.c ?? 0)
  if (n === 0) return 0
  // Rows still in a group commit would escape the delete.
  await store.flush()
  await store.sql.exec(
    `DELETE FROM readings WHERE workspace_id = {ws:UInt64} AND recorded_at < {cutoff:DateTime64(3, 'UTC')}`,
    p,
  )
  // The hourly rollup of pruned hours goes too (queries read those hours raw anyway).
  await deleteRollup(store.sql, ws, { before: cutoff })
  await store.sql.exec(
    `DELETE FROM status_reports WHERE workspace_id = {ws:UInt64} AND reported_at < {cutoff:DateTime64(3, 'UTC')}`,
    p,
  )
  return n
}
