// Auto-provisioning, the profile-assignment table, caps, plan limit, lifecycle and pulse
// configuration, end to end over HTTP on real chDB.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { startTestServer } from '../helpers/server.js'
import { countInserts } from '../helpers/store.js'
import { statusCurrent } from '../../src/store/rollup-feed.js'

const s = await startTestServer()
t.teardown(() => s.close())
const base = Date.now() - 6 * 3600_000
const at = (min: number) => new Date(base + min * 60_000).toISOString()
const report = (token: string, readings: unknown[]) =>
  s.call('POST', '/api/v1/reportData', { token, body: { readings } })
const meterOf = async (ws: number, identifier: string) =>
  s.app.parts.meters.byIdentifier(ws, identifier)

t.test('unknown meters are provisioned, ungrouped, on generic with needs_review', async (t) => {
  const { token, workspaceId } = await s.tenant()
  const r = await report(token, [
    { meter: 'new-1', kind: 'saldo', value: 5, unit: 'kwh', recorded_at: at(0) },
  ])
  t.equal(r.status, 201)
  const m = (await meterOf(workspaceId, 'new-1'))!
  t.equal(m.profile_key, 'generic')
  t.equal(m.profile_needs_review, true)
  t.equal(m.group_id, null)
  t.equal(m.unit, 'kwh')
  t.equal(m.lifecycle_state, 'active')
})

t.test('a batch confirming many provisioned meters saves them in a shared INSERT', async (t) => {
  const { token, workspaceId } = await s.tenant()
  const items = (declared: boolean, min: number) =>
    Array.from({ length: 40 }, (_, i) => ({
      meter: `fleet-${i}`,
      kind: 'saldo',
      value: 1 + min,
      unit: 'kwh',
      recorded_at: at(min),
      ...(declared ? { profile: 'generic' } : {}),
    }))
  t.equal((await report(token, items(false, 0))).status, 201)
  const sql = s.app.parts.store.sql
  const meterInserts = countInserts(t, sql, 'meters')
  const r = await report(token, items(true, 1))
  t.equal(r.status, 201)
  t.equal(r.body.accepted, 40)
  t.ok(meterInserts() <= 2, `40 profile confirmations written by ${meterInserts()} INSERTs`)
  for (let i = 0; i < 40; i++) {
    const m = (await meterOf(workspaceId, `fleet-${i}`))!
    t.equal(m.profile_needs_review, false)
  }
  const [stored] = await sql.query<{ n: string }>(
    `SELECT count() AS n FROM meters FINAL WHERE workspace_id = {ws:UInt64}
     AND startsWith(meter_identifier, 'fleet-') AND profile_needs_review = 0`,
    { ws: workspaceId },
  )
  t.equal(Number(stored!.n), 40, 'and so does the store')
})

t.test('profile assignment table', async (t) => {
  const { token, workspaceId } = await s.tenant()
  // Declared on an unknown meter: provisioned directly on it, nothing to review.
  let r = await report(token, [
    { meter: 'p-1', profile: 'pulse_counter', payload: { pulses: 10 }, recorded_at: at(0) },
  ])
  t.equal(r.status, 200, r.text) // rejected_unconfigured: no pulse weight yet
  t.equal(r.body.results[0].status, 'rejected_unconfigured')
  let m = (await meterOf(workspaceId, 'p-1'))!
  t.equal(m.profile_key, 'pulse_counter')
  t.equal(m.profile_needs_review, false)
  // Unconfirmed default upgraded by a declaration.
  await report(token, [{ meter: 'g-1', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) }])
  r = await report(token, [
    { meter: 'g-1', profile: 'pulse_counter', payload: { pulse_delta: 3 }, recorded_at: at(1) },
  ])
  t.equal(r.status, 200)
  m = (await meterOf(workspaceId, 'g-1'))!
  t.equal(m.profile_key, 'pulse_counter')
  t.equal(m.profile_needs_review, false)
  // Contradicting a confirmed assignment: whole request 422, nothing stored.
  r = await report(token, [
    { meter: 'other', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
    { meter: 'p-1', profile: 'generic', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(2) },
  ])
  t.equal(r.status, 422)
  t.ok(r.body.errors['readings.1.profile'])
  t.equal(await meterOf(workspaceId, 'other'), null, 'nothing of the batch was written')
})

t.test('pulse counters: pulses → saldo, pulse_delta → consumption, × weight in unit', async (t) => {
  const { token, workspaceId } = await s.tenant()
  await report(token, [
    { meter: 'pc', profile: 'pulse_counter', payload: { pulses: 1 }, recorded_at: at(0) },
  ])
  const m = (await meterOf(workspaceId, 'pc'))!
  await s.app.parts.meters.save({ ...m, pulse_weight: 10, pulse_unit: 'l' })
  const r = await report(token, [
    { meter: 'pc', profile: 'pulse_counter', payload: { pulses: 250 }, recorded_at: at(1) },
    { meter: 'pc', profile: 'pulse_counter', payload: { pulse_delta: 7 }, recorded_at: at(2) },
  ])
  t.equal(r.status, 201, r.text)
  const rows = await s.app.parts.store.sql.query<any>(
    `SELECT kind, value, unit, canonical_value, canonical_unit FROM readings FINAL WHERE meter_id = ${m.id} ORDER BY recorded_at`,
  )
  t.same(
    rows.map((x) => [x.kind, x.value, x.unit, x.canonical_value, x.canonical_unit]),
    [
      ['saldo', 2500, 'l', 2.5, 'm3'],
      ['consumption', 70, 'l', 0.07, 'm3'],
    ],
  )
})

t.test('hourly provisioning cap rejects only creation', async (t) => {
  const { token } = await s.tenant({ workspace: { provision_cap_per_hour: 2 } })
  const r = await report(token, [
    { meter: 'c1', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
    { meter: 'c2', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
    { meter: 'c3', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
    { meter: 'c1', kind: 'saldo', value: 2, unit: 'kwh', recorded_at: at(1) },
  ])
  t.equal(r.status, 201)
  t.same(
    r.body.results.map((x: any) => x.status),
    ['created', 'created', 'rejected_provision_limit', 'created'],
  )
  t.equal(r.body.rejected, 1)
  t.equal(r.body.accepted, 3)
})

t.test(
  'plan limit rejects creation with rejected_plan_limit; existing meters still report',
  async (t) => {
    const { token } = await s.tenant({ workspace: { plan_meter_limit: 1 } })
    const r = await report(token, [
      { meter: 'pl1', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
      { meter: 'pl2', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
    ])
    t.same(
      r.body.results.map((x: any) => x.status),
      ['created', 'rejected_plan_limit'],
    )
    const again = await report(token, [
      { meter: 'pl1', kind: 'saldo', value: 2, unit: 'kwh', recorded_at: at(5) },
    ])
    t.equal(again.body.results[0].status, 'created')
  },
)

t.test('non-operational meters: rejected_meter_retired with the state as reason', async (t) => {
  const { token, workspaceId } = await s.tenant()
  await report(token, [{ meter: 'ret', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) }])
  const m = (await meterOf(workspaceId, 'ret'))!
  for (const state of ['removed', 'archived', 'inactive']) {
    await s.admin('PUT', `/meters/${m.id}/lifecycle`, { state })
    const r = await report(token, [
      { meter: 'ret', kind: 'saldo', value: 2, unit: 'kwh', recorded_at: at(10) },
    ])
    t.equal(r.status, 200)
    t.same(r.body.results[0], {
      meter: 'ret',
      kind: 'saldo',
      recorded_at: at(10),
      status: 'rejected_meter_retired',
      reason: `meter is ${state}`,
    })
  }
  await s.admin('PUT', `/meters/${m.id}/lifecycle`, { state: 'active' })
  const back = await report(token, [
    { meter: 'ret', kind: 'saldo', value: 2, unit: 'kwh', recorded_at: at(10) },
  ])
  t.equal(back.body.results[0].status, 'created')
})

t.test('meter.created and reading.rejected go into the outbox', async (t) => {
  const { token, workspaceId } = await s.tenant({ workspace: { provision_cap_per_hour: 1 } })
  const sub = await s.admin('POST', `/workspaces/${workspaceId}/event-subscriptions`, {
    url: 'http://127.0.0.1:9/hook',
    events: ['*'],
  })
  await report(token, [
    { meter: 'ev1', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
    { meter: 'ev2', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
  ])
  // reading.rejected is emitted after the answer: wait for it (bounded), not a fixed time.
  let events: string[] = []
  for (let i = 0; i < 50 && events.length < 2; i++) {
    if (i) await new Promise((r) => setTimeout(r, 100))
    const d = await s.admin('GET', `/event-subscriptions/${sub.data.id}/deliveries`)
    events = d.data.map((x: any) => x.event).sort()
  }
  t.same(events, ['meter.created', 'reading.rejected'])
})

t.test(
  'first contact of many meters: exact meter.created, one outbox write per request',
  async (t) => {
    // A subscriber that never answers: attempts hang, so the stored rows stay as written.
    const held: import('node:http').ServerResponse[] = []
    const sink = http.createServer((_req, res) => held.push(res))
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r))
    t.teardown(() => {
      for (const res of held) res.destroy()
      sink.close()
    })
    const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`
    const { token, workspaceId } = await s.tenant({ workspace: { provision_cap_per_hour: 10_000 } })
    const subs = [
      await s.admin('POST', `/workspaces/${workspaceId}/event-subscriptions`, {
        url,
        events: ['meter.created'],
      }),
      await s.admin('POST', `/workspaces/${workspaceId}/event-subscriptions`, {
        url,
        events: ['*'],
      }),
    ]
    const n = 300
    const body = Array.from({ length: n }, (_, i) => ({
      meter: `bulk-${i}`,
      kind: 'saldo',
      value: i,
      unit: 'kwh',
      recorded_at: at(0),
    }))
    // Four requests name the same new meters at once: each meter is created once.
    const rs = await Promise.all([1, 2, 3, 4].map(() => report(token, body)))
    t.ok(
      rs.every((r) => r.status === 200 || r.status === 201),
      rs.map((r) => r.status).join(),
    )
    const created = rs.flatMap((r) => r.body.results.filter((x: any) => x.status === 'created'))
    t.equal(created.length, n, 'each reading created once across the four requests')
    for (const sub of subs) {
      const rows = await s.app.parts.store.sql.query<{ n: string; ids: string; versions: string }>(
        `SELECT count() AS n, uniqExact(JSONExtractUInt(body, 'data', 'meter', 'id')) AS ids,
              uniqExact(version) AS versions
       FROM event_deliveries FINAL
       WHERE subscription_id = {sub:UInt64} AND event = 'meter.created'`,
        { sub: sub.data.id },
      )
      t.equal(Number(rows[0]!.n), n, 'one meter.created per new meter')
      t.equal(Number(rows[0]!.ids), n, 'each meter named once')
      t.equal(Number(rows[0]!.versions), 1, 'stored in one write')
    }
  },
)

t.test(
  'units: wh and l are canonicalised; another family is unit_mismatch with no canonical value',
  async (t) => {
    const { token, workspaceId } = await s.tenant()
    await report(token, [
      { meter: 'u', kind: 'consumption', value: 1500, unit: 'wh', recorded_at: at(0) },
      { meter: 'u', kind: 'consumption', value: 2, unit: 'kwh', recorded_at: at(1) },
      { meter: 'u', kind: 'consumption', value: 3, unit: 'm3', recorded_at: at(2) },
    ])
    const m = (await meterOf(workspaceId, 'u'))!
    const rows = await s.app.parts.store.sql.query<any>(
      `SELECT canonical_value, canonical_unit, quality_flags FROM readings FINAL WHERE meter_id = ${m.id} ORDER BY recorded_at`,
    )
    t.same(rows, [
      { canonical_value: 1.5, canonical_unit: 'kwh', quality_flags: [] },
      { canonical_value: 2, canonical_unit: 'kwh', quality_flags: [] },
      { canonical_value: null, canonical_unit: null, quality_flags: ['unit_mismatch'] },
    ])
  },
)

t.test('raw payload is kept on the stored reading', async (t) => {
  const { token, workspaceId } = await s.tenant()
  const item = { meter: 'raw', kind: 'saldo', value: 9, unit: 'kwh', recorded_at: at(0) }
  await report(token, [item])
  const m = (await meterOf(workspaceId, 'raw'))!
  const [row] = await s.app.parts.store.sql.query<any>(
    `SELECT raw_payload FROM readings WHERE meter_id = ${m.id}`,
  )
  t.same(JSON.parse(row.raw_payload), item)
})

t.test('raw payload of a generic item is its JSON text exactly, whatever its shape', async (t) => {
  const { token, workspaceId } = await s.tenant()
  // The usual shape is written from its parts (store/reading-row.ts ItemParts); the others
  // are serialised at validation. Either way the stored text is JSON.stringify's.
  const items: Record<string, unknown>[] = [
    { meter: 'plain', kind: 'saldo', value: 9, unit: 'kwh', recorded_at: at(0) },
    { meter: 'plain', kind: 'saldo', value: 0.1 + 0.2, unit: 'kwh', recorded_at: at(1) },
    { meter: 'plain', kind: 'saldo', value: 1e21, unit: 'kwh', recorded_at: at(2) },
    { meter: 'plain', kind: 'saldo', value: 5e-7, unit: 'kwh', recorded_at: at(3) },
    { meter: 'plain', kind: 'consumption', value: -0, unit: 'wh', recorded_at: at(4) },
    { kind: 'saldo', meter: 'order', value: 1, unit: 'm3', recorded_at: at(5) },
    { meter: 'prof', profile: 'generic', kind: 'saldo', value: 2, unit: 'l', recorded_at: at(6) },
    { meter: 'q"uote\\back', kind: 'saldo', value: 3, unit: 'kwh', recorded_at: at(7) },
    { meter: 'tab\tnl\n', kind: 'saldo', value: 4, unit: 'kwh', recorded_at: at(8) },
    { meter: 'zähler-☃-😀', kind: 'saldo', value: 5, unit: 'kwh', recorded_at: at(9) },
    {
      meter: 'offset',
      kind: 'saldo',
      value: 6,
      unit: 'kwh',
      recorded_at: '2026-01-01T02:00:00+02:00',
    },
  ]
  const res = await report(token, items)
  t.equal(res.status, 201, res.text)
  const stored = await s.app.parts.store.sql.query<{ identifier: string; raw_payload: string }>(
    `SELECT m.meter_identifier AS identifier, r.raw_payload AS raw_payload
     FROM readings AS r FINAL INNER JOIN meters AS m FINAL ON m.id = r.meter_id
     WHERE r.workspace_id = ${workspaceId} AND m.workspace_id = ${workspaceId}`,
  )
  const want = items.map((it) => JSON.stringify(it)).sort()
  t.same(stored.map((r) => r.raw_payload).sort(), want, 'byte for byte')
})

t.test(
  'workspace object profile: status mapped through status_map, unknown flag → error',
  async (t) => {
    const { token, workspaceId } = await s.tenant()
    const sub = await s.admin('POST', `/workspaces/${workspaceId}/event-subscriptions`, {
      url: 'http://127.0.0.1:9/hook',
      events: ['meter.status_changed'],
    })
    await s.admin('POST', `/workspaces/${workspaceId}/profiles`, {
      key: 'acme',
      name: 'Acme',
      kind: 'saldo',
      unit: 'm3',
      status_map: { LK: 'leak', BAT: 'low_battery' },
    })
    const send = (min: number, status: string[]) =>
      report(token, [
        {
          meter: 'ac',
          profile: 'acme',
          payload: { value: 10 + min, status },
          recorded_at: at(min),
        },
      ])
    t.equal((await send(0, ['LK', 'WEIRD'])).status, 201)
    await send(1, ['WEIRD', 'LK'])
    await send(2, [])
    const m = (await meterOf(workspaceId, 'ac'))!
    // status reports ride on readings rows and reach their table with the rollup feed
    await statusCurrent(s.app.parts.store.sql)
    const rows = await s.app.parts.store.sql.query<any>(
      `SELECT raw_flags, arraySort(statuses) AS statuses FROM status_reports FINAL WHERE meter_id = ${m.id} ORDER BY reported_at`,
    )
    t.same(rows, [
      { raw_flags: ['LK', 'WEIRD'], statuses: ['error', 'leak'] },
      { raw_flags: ['WEIRD', 'LK'], statuses: ['error', 'leak'] },
      { raw_flags: [], statuses: [] },
    ])
    await new Promise((r) => setTimeout(r, 100))
    const d = await s.admin('GET', `/event-subscriptions/${sub.data.id}/deliveries`)
    t.equal(
      d.data.length,
      2,
      'status_changed only when the set changes (first report, then all-clear)',
    )
  },
)
