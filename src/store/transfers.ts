// Scheduled transfers as stored rows, and the day's readings a transfer reports
// (src/scheduler/transfers.ts runs them).
import { chTime, isoFromCh, type Sql } from './sql.js'
import type { Store } from './store.js'

export interface Transfer {
  id: number
  workspace_id: number
  url: string
  cron: string
  group_id: number | null
  last_run_at: string | null
  last_status: string | null
  created_at: string
}

export class TransferStore {
  constructor(private readonly store: Store) {}

  private fromRow(r: Record<string, any>): Transfer {
    return {
      id: Number(r.id),
      workspace_id: Number(r.workspace_id),
      url: r.url,
      cron: r.cron,
      group_id: r.group_id === null ? null : Number(r.group_id),
      last_run_at: isoFromCh(r.last_run_at),
      last_status: r.last_status,
      created_at: isoFromCh(r.created_at)!,
    }
  }

  async list(ws?: number): Promise<Transfer[]> {
    const rows = await this.store.sql.query<Record<string, any>>(
      `SELECT * FROM transfers FINAL WHERE deleted = 0 ${ws !== undefined ? 'AND workspace_id = {ws:UInt64}' : ''} ORDER BY id`,
      ws !== undefined ? { ws } : {},
    )
    return rows.map((r) => this.fromRow(r))
  }

  async get(id: number): Promise<Transfer | null> {
    const [r] = await this.store.sql.query<Record<string, any>>(
      'SELECT * FROM transfers FINAL WHERE id = {id:UInt64} AND deleted = 0 LIMIT 1',
      { id },
    )
    return r ? this.fromRow(r) : null
  }

  async save(t: Transfer, deleted = false): Promise<void> {
    await this.store.sql.insert(
      'transfers',
      JSON.stringify({
        ...t,
        last_run_at: t.last_run_at ? chTime(Date.parse(t.last_run_at)) : null,
        created_at: chTime(Date.parse(t.created_at)),
        deleted: deleted ? 1 : 0,
        version: await this.store.sharedVersion(),
      }),
    )
  }
}

type Window = { ws: number; meterId: number; from: number; to: number }
const params = (w: Window) => ({ ws: w.ws, m: w.meterId, from: chTime(w.from), to: chTime(w.to) })

/** Consumption readings of one meter in [from, to): how many, and their canonical sum. */
export async function consumptionSum(
  sql: Sql,
  w: Window,
): Promise<{ n: number; total: number | null }> {
  const p = params(w)
  const [c] = await sql.query<{ n: string; total: number | null }>(
    `SELECT count() AS n, sum(canonical_value) AS total FROM readings FINAL
     WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND kind = 'consumption'
       AND canonical_value IS NOT NULL
       AND recorded_at >= {from:DateTime64(3, 'UTC')} AND recorded_at < {to:DateTime64(3, 'UTC')}`,
    p,
  )
  return { n: Number(c?.n ?? 0), total: c?.total ?? null }
}

/**
 * Saldo readings of one meter for a day: the last one before `from` plus those in [from, to),
 * oldest first (intervals ending inside the day count for it).
 */
export async function saldoAround(
  sql: Sql,
  w: Window,
): Promise<{ at: string; v: number; u: string | null }[]> {
  const p = params(w)
  return await sql.query<{ at: string; v: number; u: string | null }>(
    `SELECT at, v, u FROM (
       SELECT recorded_at AS at, canonical_value AS v, canonical_unit AS u FROM readings FINAL
       WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND kind = 'saldo' AND canonical_value IS NOT NULL
         AND recorded_at < {from:DateTime64(3, 'UTC')} ORDER BY recorded_at DESC LIMIT 1
       UNION ALL
       SELECT recorded_at AS at, canonical_value AS v, canonical_unit AS u FROM readings FINAL
       WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND kind = 'saldo' AND canonical_value IS NOT NULL
         AND recorded_at >= {from:DateTime64(3, 'UTC')} AND recorded_at < {to:DateTime64(3, 'UTC')}
     ) ORDER BY at`,
    p,
  )
}
