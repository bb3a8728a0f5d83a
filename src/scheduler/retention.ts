// Retention pruning (operator-api.md "Decisions"): per workspace with `retention_days`,
// readings older than the cut-off by `recorded_at` and status reports by `reported_at` are
// deleted. `pruned` counts distinct rows (every stored version of one reading is one row).
import type { Services } from '../services.js'
import { deleteRollup } from '../store/rollup.js'
import { chTime } from '../store/sql.js'

const DAY_MS = 86_400_000

export async function pruneRetention(s: Services, now: number): Promise<{ pruned: number }> {
  let pruned = 0
  for (const w of await s.tenants.listWorkspaces()) {
    if (w.retention_days === null || w.retention_days === undefined) continue
    const cutoff = chTime(now - Number(w.retention_days) * DAY_MS)
    const p = { ws: w.id, cutoff }
    const [r] = await s.store.sql.query<{ c: string }>(
      `SELECT
         (SELECT count() FROM (SELECT 1 FROM readings WHERE workspace_id = {ws:UInt64} AND recorded_at < {cutoff:DateTime64(3, 'UTC')} GROUP BY meter_id, kind, recorded_at))
       + (SELECT count() FROM (SELECT 1 FROM status_reports WHERE workspace_id = {ws:UInt64} AND reported_at < {cutoff:DateTime64(3, 'UTC')} GROUP BY meter_id, reported_at)) AS c`,
      p,
    )
    const n = Number(r?.c ?? 0)
    if (n === 0) continue
    await s.store.flush()
    await s.store.sql.exec(
      `DELETE FROM readings WHERE workspace_id = {ws:UInt64} AND recorded_at < {cutoff:DateTime64(3, 'UTC')}`,
      p,
    )
    // The hourly rollup of pruned hours goes too (queries read those hours raw anyway).
    await deleteRollup(s.store.sql, w.id, { before: now - Number(w.retention_days) * DAY_MS })
    await s.store.sql.exec(
      `DELETE FROM status_reports WHERE workspace_id = {ws:UInt64} AND reported_at < {cutoff:DateTime64(3, 'UTC')}`,
      p,
    )
    pruned += n
  }
  return { pruned }
}
