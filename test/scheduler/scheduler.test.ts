// Scheduler tasks driven by a ManualClock through POST /admin/v1/scheduler/run: alert rules
// (no_data, status, quality; open once per rule and meter, auto-resolve, manual resolve,
// operational meters only), retention pruning, transfers to a real local receiver.
import http from 'node:http'
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { chTime } from '../../src/store/sql.js'
import { newMeter, type NewMeter } from '../../src/store/meter-row.js'
import { startTestServer } from '../helpers/server.js'

const T0 = Date.parse('2025-03-10T12:00:00Z')
const clock = new ManualClock(T0)
const srv = await startTestServer({}, { clock })
t.teardown(() => srv.close())
const s = srv.app.parts
const events: { ws: number; event: string; data: any }[] = []
const emit = s.outbox.emit.bind(s.outbox)
s.outbox.emit = async (ws, event, data) => {
  events.push({ ws, event, data })
  return emit(ws, event, data)
}

const fields = (id: string, extra: Partial<NewMeter> = {}): NewMeter =>
  newMeter(id, { unit: 'kwh', profile_needs_review: false, ...extra })
async function meter(ws: number, id: string, extra: Partial<NewMeter> = {}) {
  const r = await s.meters.create(ws, fields(id, extra))
  if (!('meter' in r)) throw new Error('refused')
  return r.meter
}
async function reading(
  ws: number,
  meterId: number,
  at: number,
  value: number,
  kind = 'consumption',
  flags: string[] = [],
) {
  await s.store.sql.insert(
    'readings',
    JSON.stringify({
      workspace_id: ws,
      meter_id: meterId,
      kind,
      recorded_at: chTime(at),
      value,
      unit: 'kwh',
      canonical_value: value,
      canonical_unit: 'kwh',
      quality_flags: flags,
      raw_payload: '{}',
      ingested_at: chTime(at),
      version: s.store.version(),
    }),
  )
}
async function status(ws: number, meterId: number, at: number, statuses: string[]) {
  await s.store.sql.insert(
    'status_reports',
    JSON.stringify({
      workspace_id: ws,
      meter_id: meterId,
      reported_at: chTime(at),
      raw_flags: statuses,
      statuses,
      version: s.store.version(),
    }),
  )
}
const run = async () => (await srv.admin('POST', '/scheduler/run')).data
const call = (method: string, path: string, body?: unknown) =>
  srv.call(method, `/admin/v1${path}`, { token: srv.adminToken, body })

t.test('alert rules: validation', async (t) => {
  const { workspaceId: ws } = await srv.tenant()
  const bad: [unknown, string][] = [
    [{ type: 'nope', params: {} }, 'type'],
    [{ params: {} }, 'type'],
    [{ type: 'no_data', params: { after_minutes: 0 } }, 'params.after_minutes'],
    [{ type: 'no_data', params: { after_minutes: 'x' } }, 'params.after_minutes'],
    [{ type: 'status', params: {} }, 'params.statuses'],
    [{ type: 'status', params: { statuses: ['flood'] } }, 'params.statuses.0'],
    [{ type: 'quality', params: { flags: [] } }, 'params.flags'],
    [{ type: 'quality', params: { flags: ['dirty'] } }, 'params.flags.0'],
    [{ type: 'quality', params: { flags: ['unit_mismatch'], x: 1 } }, 'params.x'],
  ]
  for (const [b, key] of bad) {
    const r = await call('POST', `/workspaces/${ws}/alert-rules`, b)
    t.equal(r.status, 422, key)
    t.ok(r.body.errors?.[key], `${key} in ${JSON.stringify(r.body.errors)}`)
  }
  t.equal((await call('POST', `/workspaces/99999/alert-rules`, { type: 'no_data' })).status, 404)
  const r = await call('GET', `/workspaces/${ws}/alerts?state=maybe`)
  t.equal(r.status, 422)
  t.ok(r.body.errors.state)
  t.equal((await call('POST', `/alerts/99999/resolve`)).status, 404)
})

t.test(
  'no_data: default 3 × cadence, explicit after_minutes, skip without cadence, auto-resolve',
  async (t) => {
    const { workspaceId: ws } = await srv.tenant()
    const rule = (await srv.admin('POST', `/workspaces/${ws}/alert-rules`, { type: 'no_data' }))
      .data
    t.same(rule.params, {})
    const fast = await meter(ws, 'fast', { expected_interval_minutes: 15 })
    const none = await meter(ws, 'nocadence')
    const idle = await meter(ws, 'idle', {
      expected_interval_minutes: 15,
      lifecycle_state: 'inactive',
    })
    await reading(ws, fast.id, clock.now(), 1)
    await reading(ws, none.id, clock.now() - 86_400_000, 1)
    await reading(ws, idle.id, clock.now() - 86_400_000, 1)
    events.length = 0
    clock.advance(45 * 60_000)
    let r = await run()
    t.equal(r.alerts_opened, 0, 'exactly 3 × cadence is not yet silent')
    clock.advance(60_000)
    r = await run()
    t.equal(r.alerts_opened, 1)
    let open = (await srv.admin('GET', `/workspaces/${ws}/alerts?state=open`)).data
    t.equal(open.length, 1)
    t.match(open[0], {
      rule_id: rule.id,
      meter_id: fast.id,
      type: 'no_data',
      state: 'open',
      resolved_at: null,
    })
    const opened = events.filter((e) => e.event === 'alert.opened')
    t.equal(opened.length, 1)
    t.match(opened[0]!.data.alert, {
      id: open[0].id,
      meter_id: fast.id,
      meter_identifier: 'fast',
      rule_id: rule.id,
    })
    t.equal(opened[0]!.ws, ws)
    r = await run()
    t.equal(r.alerts_opened, 0, 'one open alert per (rule, meter)')
    await reading(ws, fast.id, clock.now(), 2)
    r = await run()
    t.equal(r.alerts_resolved, 1)
    t.equal((await srv.admin('GET', `/workspaces/${ws}/alerts?state=open`)).data.length, 0)
    const resolved = (await srv.admin('GET', `/workspaces/${ws}/alerts?state=resolved`)).data
    t.match(resolved[0], {
      state: 'resolved',
      resolved_by: 'system',
      resolved_at: new Date(clock.now()).toISOString(),
    })
    t.equal(events.filter((e) => e.event === 'alert.resolved').length, 1)

    const rule2 = (
      await srv.admin('POST', `/workspaces/${ws}/alert-rules`, {
        type: 'no_data',
        params: { after_minutes: 60 },
      })
    ).data
    clock.advance(61 * 60_000)
    r = await run()
    // rule (default) opens for fast again (61 min > 45); rule2 opens for fast and nocadence.
    open = (await srv.admin('GET', `/workspaces/${ws}/alerts?state=open`)).data
    t.same(
      open.map((a: any) => `${a.rule_id}:${a.meter_id}`).sort(),
      [`${rule.id}:${fast.id}`, `${rule2.id}:${fast.id}`, `${rule2.id}:${none.id}`].sort(),
    )
    t.notOk(
      open.some((a: any) => a.meter_id === idle.id),
      'non-operational meters are not watched',
    )
    // Taking a meter out of service resolves its alerts.
    await srv.admin('PUT', `/meters/${fast.id}/lifecycle`, { state: 'inactive' })
    r = await run()
    t.equal(r.alerts_resolved, 2)
  },
)

t.test('status and quality rules; manual resolve', async (t) => {
  const { workspaceId: ws } = await srv.tenant()
  const st = (
    await srv.admin('POST', `/workspaces/${ws}/alert-rules`, {
      type: 'status',
      params: { statuses: ['leak', 'burst'] },
    })
  ).data
  const q = (
    await srv.admin('POST', `/workspaces/${ws}/alert-rules`, {
      type: 'quality',
      params: { flags: ['implausible_rate'] },
    })
  ).data
  const m = await meter(ws, 'w1')
  await status(ws, m.id, clock.now() - 1000, ['low_battery'])
  await reading(ws, m.id, clock.now() - 2000, 5, 'consumption', ['implausible_rate'])
  await reading(ws, m.id, clock.now() - 1000, 5, 'consumption', [])
  let r = await run()
  t.equal(r.alerts_opened, 0, 'low_battery is not watched; the latest reading is clean')
  await status(ws, m.id, clock.now(), ['leak'])
  await reading(ws, m.id, clock.now(), 500, 'consumption', ['implausible_rate'])
  r = await run()
  t.equal(r.alerts_opened, 2)
  const open = (await srv.admin('GET', `/workspaces/${ws}/alerts?state=open`)).data
  t.same(open.map((a: any) => a.type).sort(), ['quality', 'status'])
  t.match(open.find((a: any) => a.type === 'status').detail, /leak/)
  // Status clears → resolves; quality still there.
  clock.advance(1000)
  await status(ws, m.id, clock.now(), [])
  r = await run()
  t.equal(r.alerts_resolved, 1)
  const qa = (await srv.admin('GET', `/workspaces/${ws}/alerts?state=open`)).data
  t.equal(qa.length, 1)
  t.equal(qa[0].rule_id, q.id)
  // Manual resolve by a member.
  events.length = 0
  const res = await call('POST', `/alerts/${qa[0].id}/resolve`, { by: 'ops@example.com' })
  t.equal(res.status, 200)
  t.match(res.body.data, { state: 'resolved', resolved_by: 'ops@example.com' })
  t.equal(events.filter((e) => e.event === 'alert.resolved').length, 1)
  const again = await call('POST', `/alerts/${qa[0].id}/resolve`)
  t.equal(again.status, 200, 'resolving twice is harmless')
  t.equal(events.filter((e) => e.event === 'alert.resolved').length, 1)
  t.equal((await call('POST', `/alerts/${qa[0].id}/resolve`, { by: 5 })).status, 422)
  t.equal(st.type, 'status')
})

t.test('retention: readings by recorded_at, status reports by reported_at', async (t) => {
  const { workspaceId: ws } = await srv.tenant({ workspace: { retention_days: 30 } })
  const { workspaceId: keep } = await srv.tenant()
  const m = await meter(ws, 'r1')
  const k = await meter(keep, 'k1')
  const day = 86_400_000
  await reading(ws, m.id, clock.now() - 40 * day, 1)
  await reading(ws, m.id, clock.now() - 40 * day, 1) // a second version of the same reading
  await reading(ws, m.id, clock.now() - 31 * day, 1, 'saldo')
  await reading(ws, m.id, clock.now() - 29 * day, 1)
  await status(ws, m.id, clock.now() - 35 * day, ['leak'])
  await status(ws, m.id, clock.now() - 1 * day, [])
  await reading(keep, k.id, clock.now() - 400 * day, 1)
  const r = await run()
  t.equal(r.pruned, 3, '2 readings + 1 status report')
  const left = await s.store.sql.query<{ c: string }>(
    `SELECT count() AS c FROM readings WHERE workspace_id = {ws:UInt64}`,
    { ws },
  )
  t.equal(Number(left[0]!.c), 1)
  const st = await s.store.sql.query<{ c: string }>(
    `SELECT count() AS c FROM status_reports WHERE workspace_id = {ws:UInt64}`,
    { ws },
  )
  t.equal(Number(st[0]!.c), 1)
  const other = await s.store.sql.query<{ c: string }>(
    `SELECT count() AS c FROM readings WHERE workspace_id = {ws:UInt64}`,
    { ws: keep },
  )
  t.equal(Number(other[0]!.c), 1, 'no retention_days: nothing pruned')
  t.equal((await run()).pruned, 0)
})

t.test('transfers: validation, cron due by the clock, payload, failure event', async (t) => {
  const { workspaceId: ws } = await srv.tenant()
  const received: any[] = []
  let answer = 200
  const receiver = http.createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(body) })
      res.writeHead(answer).end()
    })
  })
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok))
  t.teardown(() => receiver.close())
  const url = `http://127.0.0.1:${(receiver.address() as any).port}/portal`

  const bad: [unknown, string][] = [
    [{ cron: '0 2 * * *' }, 'url'],
    [{ url: 'ftp://x', cron: '0 2 * * *' }, 'url'],
    [{ url: 'not a url', cron: '0 2 * * *' }, 'url'],
    [{ url }, 'cron'],
    [{ url, cron: 'every day' }, 'cron'],
    [{ url, cron: '0 2 * * *', group_id: 99999 }, 'group_id'],
    [{ url, cron: '0 2 * * *', group_id: 'x' }, 'group_id'],
  ]
  for (const [b, key] of bad) {
    const r = await call('POST', `/workspaces/${ws}/transfers`, b)
    t.equal(r.status, 422, key)
    t.ok(r.body.errors?.[key], `${key} in ${JSON.stringify(r.body.errors)}`)
  }

  // Day D = 2025-03-10 (clock). Readings for 2025-03-09.
  clock.set(Date.parse('2025-03-10T01:00:00Z'))
  const c1 = await meter(ws, 'c1')
  const s1 = await meter(ws, 's1')
  const d0 = Date.parse('2025-03-09T00:00:00Z')
  await reading(ws, c1.id, d0 + 3600_000, 1.5)
  await reading(ws, c1.id, d0 + 7200_000, 2.5)
  await reading(ws, c1.id, d0 - 3600_000, 100) // the day before: not counted
  await reading(ws, s1.id, d0 - 3600_000, 1000, 'saldo')
  await reading(ws, s1.id, d0 + 12 * 3600_000, 1004, 'saldo')
  await reading(ws, s1.id, d0 + 23 * 3600_000, 1010, 'saldo')

  const tr = (await srv.admin('POST', `/workspaces/${ws}/transfers`, { url, cron: '0 2 * * *' }))
    .data
  t.match(tr, { url, cron: '0 2 * * *', group_id: null, last_run_at: null })
  let r = await run()
  t.equal(received.length, 0, 'not due before 02:00')
  clock.set(Date.parse('2025-03-10T02:00:30Z'))
  r = await run()
  t.equal(r.transfers, 1)
  t.equal(received.length, 1)
  const p = received[0]!.body
  t.equal(received[0]!.headers['content-type'], 'application/json')
  t.match(p, { transfer_id: tr.id, workspace_id: ws, day: '2025-03-09' })
  const byId = Object.fromEntries(p.meters.map((m: any) => [m.meter_identifier, m]))
  t.equal(byId.c1.consumption, 4)
  t.equal(byId.s1.consumption, 10)
  t.equal(byId.s1.unit, 'kwh')
  r = await run()
  t.equal(r.transfers, 0, 'ran once for this fire time')

  // Next day the target fails → integration.transfer_failed.
  events.length = 0
  answer = 503
  clock.set(Date.parse('2025-03-11T02:00:01Z'))
  r = await run()
  t.equal(r.transfers, 1)
  const failed = events.filter((e) => e.event === 'integration.transfer_failed')
  t.equal(failed.length, 1)
  t.match(failed[0]!.data, { transfer_id: tr.id, url, day: '2025-03-10', status_code: 503 })
  const list = (await srv.admin('GET', `/workspaces/${ws}/transfers`)).data
  t.match(list[0].last_status, /failed/)

  // A group transfer covers the group's subtree only.
  const g = await s.groups.nextId()
  await s.groups.save([{ id: g, workspace_id: ws, name: 'G', parent_id: null, path: `/${g}/` }])
  await meter(ws, 'in-group', { group_id: g })
  const tg = (
    await srv.admin('POST', `/workspaces/${ws}/transfers`, { url, cron: '* * * * *', group_id: g })
  ).data
  answer = 200
  received.length = 0
  clock.advance(61_000)
  await run()
  const mine = received.find((x) => x.body.transfer_id === tg.id)
  t.same(
    mine.body.meters.map((m: any) => m.meter_identifier),
    ['in-group'],
  )
  t.equal(mine.body.meters[0].consumption, null, 'no data that day')
  t.equal((await call('DELETE', `/transfers/${tg.id}`)).status, 200)
})
