// Meter groups: a tree stored with materialised paths (`/<id>/<id>/`), so a subtree is a
// path prefix. Small per workspace; read with FINAL.
import type { Sql } from './sql.js'
import type { Store } from './store.js'

export interface MeterGroup {
  id: number
  workspace_id: number
  name: string
  parent_id: number | null
  path: string
}

function fromRow(r: Record<string, any>): MeterGroup {
  return {
    id: Number(r.id),
    workspace_id: Number(r.workspace_id),
    name: r.name,
    parent_id: r.parent_id === null ? null : Number(r.parent_id),
    path: r.path,
  }
}

export class GroupRepo {
  private readonly sql: Sql
  constructor(private readonly store: Store) {
    this.sql = store.sql
  }

  /** Every group of the workspace, ordered by path. */
  async list(ws: number): Promise<MeterGroup[]> {
    return (
      await this.sql.query(
        'SELECT * FROM meter_groups FINAL WHERE workspace_id = {ws:UInt64} AND deleted = 0 ORDER BY path',
        { ws },
      )
    ).map(fromRow)
  }

  async get(ws: number, id: number): Promise<MeterGroup | null> {
    const [r] = await this.sql.query(
      'SELECT * FROM meter_groups FINAL WHERE workspace_id = {ws:UInt64} AND id = {id:UInt64} AND deleted = 0',
      { ws, id },
    )
    return r ? fromRow(r) : null
  }

  async nextId(): Promise<number> {
    return this.store.nextId('meter_groups')
  }

  /** Stores new versions of several groups in one insert (a move rewrites a subtree). */
  async save(groups: MeterGroup[]): Promise<void> {
    if (!groups.length) return
    const v = await this.store.sharedVersion()
    await this.sql.insert(
      'meter_groups',
      groups.map((g) => JSON.stringify({ ...g, deleted: 0, version: v })).join('\n'),
    )
  }

  async delete(g: MeterGroup): Promise<void> {
    await this.sql.insert(
      'meter_groups',
      JSON.stringify({ ...g, deleted: 1, version: await this.store.sharedVersion() }),
    )
  }
}
