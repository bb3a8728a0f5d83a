// Alert rules, alerts and the re-arm marks of member-resolved alerts (operator-api.md,
// "Alerts"; docs/alerts.md), as stored rows. What opens and resolves them, and the events
// that go out, is the scheduler's (src/scheduler/alerts.ts).
import { meterReadFilter, recentFirst } from './recent-first.js'
import { chTime, isoFromCh, parseChTime, type Sql } from './sql.js'
import type { Store } from './store.js'

export type AlertRuleType = 'no_data' | 'status' | 'quality'

export interface AlertRule {
  id: number
  workspace_id: number
  type: AlertRuleType
  params: Record<string, unknown>
  created_at: string
}

export interface Alert {
  id: number
  workspace_id: number
  rule_id: number
  meter_id: number
  state: 'open' | 'resolved'
  opened_at: string
  resolved_at: string | null
  resolved_by: string | null
  detail: string
}

export class AlertStore {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
  ) {}

  nextAlertId(): Promise<number> {
    return this.store.nextId('alerts')
  }

  async createRule(
    ws: number,
    type: AlertRuleType,
    params: Record<string, unknown>,
  ): Promise<AlertRule> {
    const now = this.now()
    const rule: AlertRule = {
      id: await this.store.nextId('alert_rules'),
      workspace_id: ws,
      type,
      params,
      created_at: new Date(now).toISOString(),
    }
    await this.store.sql.insert(
      'alert_rules',
      JSON.stringify({
        ...rule,
        params: JSON.stringify(params),
        created_at: chTime(now),
        deleted: 0,
        version: await this.store.sharedVersion(),
      }),
    )
    return rule
  }

  async rules(ws: number): Promise<AlertRule[]> {
    const rows = await this.store.sql.query<Record<string, any>>(
      'SELECT * FROM alert_rules FINAL WHERE workspace_id = {ws:UInt64} AND deleted = 0 ORDER BY id',
      { ws },
    )
    return rows.map((r) => ({
      id: Number(r.id),
      workspace_id: Number(r.workspace_id),
      type: r.type,
      params: JSON.parse(r.params),
      created_at: isoFromCh(r.created_at)!,
    }))
  }

  private fromRow(r: Record<string, any>): Alert {
    return {
      id: Number(r.id),
      workspace_id: Number(r.workspace_id),
      rule_id: Number(r.rule_id),
      meter_id: Number(r.meter_id),
      state: r.state,
      opened_at: isoFromCh(r.opened_at)!,
      resolved_at: isoFromCh(r.resolved_at),
      resolved_by: r.resolved_by,
      detail: r.detail,
    }
  }

  async list(ws: number, state?: 'open' | 'resolved'): Promise<Alert[]> {
    const rows = await this.store.sql.query<Record<string, any>>(
      `SELECT * FROM alerts FINAL WHERE workspace_id = {ws:UInt64} ${state ? 'AND state = {state:String}' : ''} ORDER BY id DESC`,
      state ? { ws, state } : { ws },
    )
    return rows.map((r) => this.fromRow(r))
  }

  async get(id: number): Promise<Alert | null> {
    const [r] = await this.store.sql.query<Record<string, any>>(
      'SELECT * FROM alerts FINAL WHERE id = {id:UInt64} LIMIT 1',
      { id },
    )
    return r ? this.fromRow(r) : null
  }

  async save(a: Alert): Promise<void> {
    await this.store.sql.insert(
      'alerts',
      JSON.stringify({
        ...a,
        opened_at: chTime(Date.parse(a.opened_at)),
        resolved_at: a.resolved_at ? chTime(Date.parse(a.resolved_at)) : null,
        version: await this.store.sharedVersion(),
      }),
    )
  }

  /** `rule:meter` pairs whose member-resolved alert waits for its condition to clear. */
  async waiting(ws: number): Promise<Set<string>> {
    const rows = await this.store.sql.query<{ rule_id: string; meter_id: string }>(
      'SELECT rule_id, meter_id FROM alert_rearm FINAL WHERE workspace_id = {ws:UInt64} AND waiting = 1',
      { ws },
    )
    return new Set(rows.map((r) => `${Number(r.rule_id)}:${Number(r.meter_id)}`))
  }

  /** Marks (rule, meter) of `a` as waiting for its condition to clear, or re-armed. */
  async setWaiting(
    a: { workspace_id: number; rule_id: number; meter_id: number; id?: number },
    waiting: boolean,
  ): Promise<void> {
    await this.store.sql.insert(
      'alert_rearm',
      JSON.stringify({
        workspace_id: a.workspace_id,
        rule_id: a.rule_id,
        meter_id: a.meter_id,
        alert_id: a.id ?? 0,
        waiting: waiting ? 1 : 0,
        version: await this.store.sharedVersion(),
      }),
    )
  }
}

/**
 * Per meter of `ids` with readings (and other meters with readings in the last week): time of
 * the newest reading (any kind) and that reading's quality flags; the last week read first.
 */
export function latestReadings(
  sql: Sql,
  ws: number,
  ids: readonly number[],
  now: number,
): Promise<Map<number, { at: number; flags: string[] }>> {
  return recentFirst(ids, now, (i, since) => newestReadings(sql, ws, i, since))
}

async function newestReadings(
  sql: Sql,
  ws: number,
  ids?: number[],
  since?: number,
): Promise<Map<number, { at: number; flags: string[] }>> {
  const f = meterReadFilter('recorded_at', ids, since)
  const rows = await sql.query<{ meter_id: string; at: string; flags: string[] }>(
    `SELECT meter_id, max(recorded_at) AS at, argMax(quality_flags, (recorded_at, version)) AS flags
     FROM readings WHERE workspace_id = {ws:UInt64}${f.where} GROUP BY meter_id`,
    { ws, ...f.params },
  )
  const out = new Map<number, { at: number; flags: string[] }>()
  for (const r of rows) out.set(Number(r.meter_id), { at: parseChTime(r.at), flags: r.flags })
  return out
}
