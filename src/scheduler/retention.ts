// Retention pruning (operator-api.md "Decisions"): per workspace with `retention_days`,
// readings older than the cut-off by `recorded_at` and status reports by `reported_at` are
// deleted (src/store/retention.ts). `pruned` counts distinct rows.
import type { TaskDeps } from './deps.js'
import { pruneWorkspace } from '../store/retention.js'

const DAY_MS = 86_400_000

export async function pruneRetention(
  s: Pick<TaskDeps, 'keyQuarantine' | 'store' | 'tenants'>,
  now: number,
): Promise<{ pruned: number }> {
  let pruned = 0
  for (const w of await s.tenants.listWorkspaces()) {
    if (w.retention_days === null || w.retention_days === undefined) continue
    pruned += await pruneWorkspace(s.store, w.id, now - Number(w.retention_days) * DAY_MS)
  }
  // the wM-Bus key quarantine has its own retention (QUARANTINE_RETENTION_DAYS)
  await s.keyQuarantine.pruneExpired()
  return { pruned }
}
