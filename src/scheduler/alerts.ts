// Alert rules and their evaluation (operator-api.md, "Alerts"; docs/alerts.md). Each pass
// evaluates every rule against every operational meter of its workspace: a condition that
// holds with no open alert for (rule, meter) opens one (`alert.opened`); an open alert whose
// condition no longer holds, or whose meter is no longer watched, resolves (`alert.resolved`).
import type { TaskDeps } from './deps.js'
import { isOperational, type Meter } from '../store/meter-row.js'
import { AlertStore, latestReadings, type Alert, type AlertRule } from '../store/alerts.js'
import { latestStatusesOf } from '../store/status.js'

export type { Alert, AlertRule, AlertRuleType } from '../store/alerts.js'

/** Alerts as stored (AlertStore), plus what opening and resolving one sends out. */
export class AlertRepo extends AlertStore {
  constructor(
    private readonly s: Pick<TaskDeps, 'clock' | 'meters' | 'outbox' | 'store' | 'tenants'>,
  ) {
    super(s.store, () => s.clock.now())
  }

  async open(rule: AlertRule, meter: Meter, detail: string, now: number): Promise<Alert> {
    const a: Alert = {
      id: await this.nextAlertId(),
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
  s: Pick<TaskDeps, 'clock' | 'meters' | 'outbox' | 'store' | 'tenants'>,
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
    const ids = meters.map((m) => m.id)
    const latest = await latestReadings(s.store.sql, ws, ids, now)
    const statuses = await latestStatusesOf(s.store.sql, ws, ids, now)
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
