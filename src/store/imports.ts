// Import jobs as stored rows (operator-api.md, "Imports and transfers"): one versioned row per
// import in `imports`, rewritten as it runs. src/jobs/imports.ts runs them.
import { chTime, isoFromCh } from './sql.js'
import type { Store } from './store.js'

export interface ImportRecord {
  id: number
  workspace_id: number
  status: 'running' | 'completed' | 'failed'
  accepted: number
  duplicates: number
  rejected: number
  error: string | null
  created_at: string
  finished_at: string | null
}

export class ImportStore {
  constructor(private readonly store: Store) {}

  async save(r: ImportRecord): Promise<void> {
    await this.store.sql.insert(
      'imports',
      JSON.stringify({
        ...r,
        created_at: chTime(Date.parse(r.created_at)),
        finished_at: r.finished_at ? chTime(Date.parse(r.finished_at)) : null,
        version: await this.store.sharedVersion(),
      }),
    )
  }

  async get(id: number): Promise<ImportRecord | null> {
    const [r] = await this.store.sql.query<Record<string, any>>(
      'SELECT * FROM imports FINAL WHERE id = {id:UInt64} LIMIT 1',
      { id },
    )
    if (!r) return null
    return {
      id: Number(r.id),
      workspace_id: Number(r.workspace_id),
      status: r.status,
      accepted: Number(r.accepted),
      duplicates: Number(r.duplicates),
      rejected: Number(r.rejected),
      error: r.error,
      created_at: isoFromCh(r.created_at)!,
      finished_at: isoFromCh(r.finished_at),
    }
  }

  /** Ids of imports in state `running`, on any instance. */
  async runningIds(): Promise<number[]> {
    const rows = await this.store.sql.query<{ id: string }>(
      "SELECT id FROM imports FINAL WHERE status = 'running'",
    )
    return rows.map((r) => Number(r.id))
  }
}
