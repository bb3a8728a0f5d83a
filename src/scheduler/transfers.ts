// Scheduled transfers (operator-api.md, "Imports and transfers"): on its cron schedule
// (evaluated with croner against the injected clock: due when the next fire time after the
// last run has passed), a transfer POSTs the previous UTC day's consumption of its group's
// meters (subtree included; no group = every meter) as JSON to its URL. Anything but a 2xx
// answer emits `integration.transfer_failed`.
import { Cron } from 'croner'
import { deriveConsumption } from '../query/derive.js'
import { familyOf, meterUnit } from '../domain/units.js'
import type { TaskDeps } from './deps.js'
import type { Meter } from '../store/meter-row.js'
import { parseChTime } from '../store/sql.js'
import { consumptionSum, saldoAround, TransferStore, type Transfer } from '../store/transfers.js'
import { meterExchanges } from '../store/exchanges.js'
import { qualityContext } from '../domain/quality-context.js'
import { post } from '../events/send.js'

export type { Transfer } from '../store/transfers.js'

const DAY_MS = 86_400_000
const TIMEOUT_MS = 10_000

export function transferView(t: Transfer) {
  return {
    id: t.id,
    url: t.url,
    cron: t.cron,
    group_id: t.group_id,
    last_run_at: t.last_run_at,
    last_status: t.last_status,
    created_at: t.created_at,
  }
}

/** Throws croner's message when the expression is not a valid cron pattern. */
export function parseCron(expr: string): Cron {
  return new Cron(expr, { timezone: 'UTC', paused: true })
}

/** The stored transfers; built from the services, as the admin routes and tests do. */
export class TransferRepo extends TransferStore {
  constructor(s: Pick<TaskDeps, 'config' | 'groups' | 'meters' | 'outbox' | 'store'>) {
    super(s.store)
  }
}

/** Whether the transfer's cron fired since its last run (or creation), at `now`. */
export function isDue(t: Transfer, now: number): boolean {
  const base = Date.parse(t.last_run_at ?? t.created_at)
  const next = parseCron(t.cron).nextRun(new Date(base))
  return next !== null && next.getTime() <= now
}

async function groupMeters(
  s: Pick<TaskDeps, 'config' | 'groups' | 'meters' | 'outbox' | 'store'>,
  t: Transfer,
): Promise<Meter[]> {
  const meters = await s.meters.list(t.workspace_id)
  if (t.group_id === null) return meters
  const groups = await s.groups.list(t.workspace_id)
  const root = groups.find((g) => g.id === t.group_id)
  if (!root) return []
  const inTree = new Set(groups.filter((g) => g.path.startsWith(root.path)).map((g) => g.id))
  return meters.filter((m) => m.group_id !== null && inTree.has(m.group_id))
}

/** One meter's consumption in [from, to): consumption readings summed, else derived from saldo. */
async function dailyConsumption(
  s: Pick<TaskDeps, 'config' | 'groups' | 'meters' | 'outbox' | 'store'>,
  m: Meter,
  from: number,
  to: number,
) {
  const sql = s.store.sql
  const w = { ws: m.workspace_id, meterId: m.id, from, to }
  const c = await consumptionSum(sql, w)
  const unit = familyOf(meterUnit(m))
  if (c.n > 0) return { consumption: Number(c.total), unit: unit ?? null, source: 'consumption' }
  // Saldo: the last reading before the day plus the day's readings; intervals ending inside
  // the day count for it.
  const rows = await saldoAround(sql, w)
  if (rows.length < 2)
    return {
      consumption: null,
      unit: unit ?? (rows[0]?.u as 'kwh' | 'm3' | null) ?? null,
      source: 'none',
    }
  const ctx = qualityContext(m, await meterExchanges(sql, m.workspace_id, m.id))
  const derived = deriveConsumption(
    rows.map((r) => ({ recordedAt: parseChTime(r.at), canonicalValue: Number(r.v) })),
    {
      ...ctx,
      interpolate: null,
      unit: (rows[0]!.u as 'kwh' | 'm3' | null) ?? unit,
    },
  ).filter((r) => r.period_end > from && r.period_end <= to)
  const unknown = derived.some((r) => r.consumption === null)
  const total = derived.reduce((a, r) => a + (r.consumption ?? 0), 0)
  return {
    consumption: unknown || !derived.length ? null : total,
    unit: rows[0]!.u ?? unit,
    source: 'saldo',
  }
}

/** The JSON body of one transfer run for the UTC day before `now`. */
export async function transferPayload(
  s: Pick<TaskDeps, 'config' | 'groups' | 'meters' | 'outbox' | 'store'>,
  t: Transfer,
  now: number,
) {
  const to = now - (now % DAY_MS)
  const from = to - DAY_MS
  const meters = await groupMeters(s, t)
  const rows = []
  for (const m of meters) {
    const d = await dailyConsumption(s, m, from, to)
    rows.push({ meter_id: m.id, meter_identifier: m.meter_identifier, name: m.name, ...d })
  }
  return {
    transfer_id: t.id,
    workspace_id: t.workspace_id,
    group_id: t.group_id,
    day: new Date(from).toISOString().slice(0, 10),
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    meters: rows,
  }
}

/** Runs one transfer now; returns whether the target accepted it. */
export async function runTransfer(
  s: Pick<TaskDeps, 'config' | 'groups' | 'meters' | 'outbox' | 'store'>,
  repo: TransferRepo,
  t: Transfer,
  now: number,
): Promise<boolean> {
  let statusCode: number | null = null
  let error: string | null = null
  let day = new Date(now - (now % DAY_MS) - DAY_MS).toISOString().slice(0, 10)
  try {
    const payload = await transferPayload(s, t, now)
    day = payload.day
    // The same outbound rule as event deliveries: no redirects followed, private targets
    // refused at connect time when EVENT_BLOCK_PRIVATE_TARGETS=1.
    const out = await post(
      t.url,
      { 'content-type': 'application/json', 'user-agent': 'meterflow-transfer' },
      JSON.stringify(payload),
      TIMEOUT_MS,
      { blockPrivate: s.config.EVENT_BLOCK_PRIVATE_TARGETS },
    )
    statusCode = out.status
    if (out.status !== null && out.error) error = `target answered ${out.status}`
    else error = out.error
  } catch (e) {
    error = (e as Error).message || String(e)
  }
  await repo.save({
    ...t,
    last_run_at: new Date(now).toISOString(),
    last_status: error ? `failed: ${error}` : 'ok',
  })
  if (error)
    await s.outbox.emit(t.workspace_id, 'integration.transfer_failed', {
      transfer_id: t.id,
      url: t.url,
      day,
      status_code: statusCode,
      error,
    })
  return !error
}

/** Scheduler task: every due transfer runs once. */
export async function runDueTransfers(
  s: Pick<TaskDeps, 'config' | 'groups' | 'meters' | 'outbox' | 'store'>,
  now: number,
): Promise<{ transfers: number }> {
  const repo = new TransferRepo(s)
  let n = 0
  for (const t of await repo.list()) {
    if (!isDue(t, now)) continue
    await runTransfer(s, repo, t, now)
    n++
  }
  return { transfers: n }
}
