// Alert rules and their evaluation (operator-api.md, "Alerts"; docs/alerts.md). Each pass
// evaluates every rule against every operational meter of its workspace: a condition that
// holds with no open alert for (rule, meter) opens one (`alert.opened`); an open alert whose
// condition no longer holds, or whose meter is no longer watched, resolves (`alert.resolved`).
import type { Services } from '../services.js'
import { isOperational, type Meter } from '../store/meters.js'
import { chTime, isoFromCh, parseChTime } from '../store/sql.js'
import { latestStatuses } from '../store/status.js'

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

export class AlertRepo {
  constructor(private readonly s: Services) {}

  async createRule(
    ws: number,
    type: AlertRuleType,
    params: Record<string, unknown>,
  ): Promise<AlertRule> {
    const rule: AlertRule = {
      id: await this.s.store.nextId('alert_rules'),
      workspace_id: ws,
      type,
      params,
      created_at: new Date(this.s.clock.now()).toISOString(),
    }
    await this.s.store.sql.insertJsonEachRow(
      'alert_rules',
      JSON.stringify({
        ...rule,
        params: JSON.stringify(params),
        created_at: chTime(this.s.clock.now()),
        deleted: 0,
        version: await this.s.store.sharedVersion(),
      }),
    )
    return rule
  }

  async rules(ws: number): Promise<AlertRule[]> {
    const rows = await this.s.store.sql.query<Record<string, any>>(
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
    const rows = await this.s.store.sql.query<Record<string, any>>(
      `SELECT * FROM alerts FINAL WHERE workspace_id = {ws:UInt64} ${state ? 'AND state = {state:String}' : ''} ORDER BY id DESC`,
      state ? { ws, state } : { ws },
    )
    return rows.map((r) => this.fromRow(r))
  }

  async get(id: number): Promise<Alert | null> {
    const [r] = await this.s.store.sql.query<Record<string, any>>(
      'SELECT * FROM alerts FINAL WHERE id = {id:UInt64} LIMIT 1',
      { id },
    )
    return r ? this.fromRow(r) : null
  }

  async save(a: Alert): Promise<void> {
    await this.s.store.sql.insertJsonEachRow(
      'alerts',
      JSON.stringify({
        ...a,
        opened_at: chTime(Date.parse(a.opened_at)),
        resolved_at: a.resolved_at ? chTime(Date.parse(a.resolved_at)) : null,
        version: await this.s.store.sharedVersion(),
      }),
    )
  }

  /** `rule:meter` pairs whose member-resolved alert waits for its condition to clear. */
  async waiting(ws: number): Promise<Set<string>> {
    const rows = await this.s.store.sql.query<{ rule_id: string; meter_id: string }>(
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
    await this.s.store.sql.insertJsonEachRow(
      'alert_rearm',
      JSON.stringify({
        workspace_id: a.workspace_id,
        rule_id: a.rule_id,
        meter_id: a.meter_id,
        alert_id: a.id ?? 0,
        waiting: waiting ? 1 : 0,
        version: await this.s.store.sharedVersion(),
      }),
    )
  }

  async open(rule: AlertRule, meter: Meter, detail: string, now: number): Promise<Alert> {
    const a: Alert = {
      id: await this.s.store.nextId('alerts'),
      workspace_id: rule.workspace_id,
      rule_id: rule.id,
      meter_id: meter.id,
      state: 'open',
      opened_at: new Date(now).toISOString(),
      resolved_at: null,
      resolved_by: null,
      detail,
    }
    await this.save(a)
    await this.s.outbox.emit(rule.workspace_id, 'alert.opened', {
      alert: alertEvent(a, rule, meter),
    })
    return a
  }

  async resolve(
    a: Alert,
    by: string,
    now: number,
    rule: AlertRule | null,
    meter: Meter | null,
  ): Promise<Alert> {
    const next: Alert = {
      ...a,
      state: 'resolved',
      resolved_at: new Date(now).toISOString(),
      resolved_by: by,
    }
    await this.save(next)
    await this.s.outbox.emit(a.workspace_id, 'alert.resolved', {
      alert: alertEvent(next, rule, meter),
    })
    return next
  }
}

export function alertView(a: Alert, rule?: AlertRule | null) {
  return {
    id: a.id,
    rule_id: a.rule_id,
    type: rule?.type ?? null,
    meter_id: a.meter_id,
    state: a.state,
    opened_at: a.opened_at,
    resolved_at: a.resolved_at,
    resolved_by: a.resolved_by,
    detail: a.detail,
  }
}

function alertEvent(a: Alert, rule: AlertRule | null, meter: Meter | null) {
  return {
    ...alertView(a, rule),
    meter_identifier: meter?.meter_identifier ?? null,
  }
}

/** Per meter: time of the newest reading (any kind) and that reading's quality flags. */
async function latestReadings(
  s: Services,
  ws: number,
): Promise<Map<number, { at: number; flags: string[] }>> {
  const rows = await s.store.sql.query<{ meter_id: string; at: string; flags: string[] }>(
    `SELECT meter_id, max(recorded_at) AS at, argMax(quality_flags, (recorded_at, version)) AS flags
     FROM readings WHERE workspace_id = {ws:UInt64} GROUP BY meter_id`,
    { ws },
  )
  const out = new Map<number, { at: number; flags: string[] }>()
  for (const r of rows) out.set(Number(r.meter_id), { at: parseChTime(r.at), flags: r.flags })
  return out
}

/** The condition of `rule` for `meter`: a detail text when it holds, otherwise null. */
function condition(
  rule: AlertRule,
  m: Meter,
  now: number,
  latest: { at: number; flags: string[] } | undefined,
  status: { statuses: string[] } | undefined,
): string | null | 'skip' {
  switch (rule.type) {
    case 'no_data': {
      const after =
        typeof rule.params.after_minutes === 'number'
          ? rule.params.after_minutes
          : m.expected_interval_minutes
            ? 3 * m.expected_interval_minutes
            : null
      if (after === null) return 'skip'
      // A meter that never reported counts from its creation.
      const last = latest?.at ?? Date.parse(m.created_at)
      const silentMs = now - last
      return silentMs > after * 60_000
        ? `No data for ${Math.floor(silentMs / 60_000)} minutes (limit ${after}).`
        : null
    }
    case 'status': {
      const want = (rule.params.statuses as string[]) ?? []
      const hit = (status?.statuses ?? []).filter((x) => want.includes(x))
      return hit.length ? `Device status: ${hit.join(', ')}.` : null
    }
    case 'quality': {
      const want = (rule.params.flags as string[]) ?? []
      const hit = (latest?.flags ?? []).filter((x) => want.includes(x))
      return hit.length ? `Latest reading flagged: ${hit.join(', ')}.` : null
    }
  }
}

/** One evaluation pass over every workspace. */
export async function evaluateAlerts(
  s: Services,
  now: number,
): Promise<{ alerts_opened: number; alerts_resolved: number }> {
  const repo = new AlertRepo(s)
  let opened = 0
  let resolved = 0
  for (const w of await s.tenants.listWorkspaces()) {
    const ws = w.id
    const rules = await repo.rules(ws)
    const open = await repo.list(ws, 'open')
    if (!rules.length && !open.length) continue
    const meters = await s.meters.list(ws)
    const byId = new Map(meters.map((m) => [m.id, m]))
    const latest = await latestReadings(s, ws)
    const statuses = await latestStatuses(s.store.sql, ws)
    const openByKey = new Map(open.map((a) => [`${a.rule_id}:${a.meter_id}`, a]))
    const rulesById = new Map(rules.map((r) => [r.id, r]))
    // Member-resolved alerts stay resolved while their condition keeps holding.
    const waiting = await repo.waiting(ws)

    for (const rule of rules)
      for (const m of meters) {
        if (!isOperational(m.lifecycle_state)) continue
        const c = condition(rule, m, now, latest.get(m.id), statuses.get(m.id))
        const key = `${rule.id}:${m.id}`
        const existing = openByKey.get(key)
        if (typeof c === 'string' && c !== 'skip') {
          if (!existing && !waiting.has(key)) {
            await repo.open(rule, m, c, now)
            opened++
          }
          openByKey.delete(key)
        } else if (c === null && waiting.has(key)) {
          // The condition cleared: the next time it holds, an alert opens again.
          await repo.setWaiting({ workspace_id: ws, rule_id: rule.id, meter_id: m.id }, false)
        }
      }
    // Whatever is still in openByKey no longer holds (or is no longer watched): resolve it.
    for (const a of openByKey.values()) {
      await repo.resolve(
        a,
        'system',
        now,
        rulesById.get(a.rule_id) ?? null,
        byId.get(a.meter_id) ?? null,
      )
      resolved++
    }
  }
  return { alerts_opened: opened, alerts_resolved: resolved }
}
