import t from 'tap'
import { startTestServer } from '../helpers/server.js'
import { createMeter, insertReadings, insertStatus, qs } from '../query/helpers.js'

const s = await startTestServer()
t.teardown(() => s.close())
const a = await s.tenant()
const other = await s.tenant()
// Spy on whatever outbox the app wired in.
const emitted: { event: string; data: any }[] = []
const outbox = s.app.parts.outbox
const origEmit = outbox.emit.bind(outbox)
outbox.emit = async (ws, event, data) => {
  emitted.push({ event, data })
  return origEmit(ws, event, data)
}

t.test('create: defaults, profile, lifecycle, warning null, meter.created', async (t) => {
  const r = await s.call('POST', '/api/v1/meters', {
    token: a.token,
    body: { meter_identifier: 'M-100', name: 'Hall' },
  })
  t.equal(r.status, 201)
  t.match(r.body.data, {
    meter_identifier: 'M-100',
    name: 'Hall',
    unit: null,
    profile: { key: 'generic', version: 1, needs_review: true },
    group: null,
    lifecycle: { state: 'active', operational: true, changed_at: null },
    status: null,
  })
  t.equal(r.body.warning, null)
  const ev = emitted.find((e) => e.event === 'meter.created' && e.data.meter.identifier === 'M-100')
  t.ok(ev, 'meter.created emitted')
  t.same(ev?.data, {
    meter: { id: r.body.data.id, identifier: 'M-100', name: 'Hall', unit: null, group_id: null },
  })
})

t.test('create: warning names the interpretation fields that were set', async (t) => {
  const r = await s.call('POST', '/api/v1/meters', {
    token: a.token,
    body: {
      meter_identifier: 'M-101',
      unit: 'wh',
      rollover_max: 99999,
      pulse_weight: 10,
      pulse_unit: 'wh',
      expected_interval_minutes: 15,
    },
  })
  t.equal(r.status, 201)
  t.match(r.body.warning, { message: String })
  t.same(r.body.warning.changed, ['unit', 'rollover_max', 'pulse_weight', 'pulse_unit'])
})

t.test('create: validation errors are 422 keyed by field', async (t) => {
  const cases: [unknown, string][] = [
    [{}, 'meter_identifier'],
    [{ meter_identifier: '' }, 'meter_identifier'],
    [{ meter_identifier: 5 }, 'meter_identifier'],
    [{ meter_identifier: 'x', unit: 'gallon' }, 'unit'],
    [{ meter_identifier: 'x', name: 7 }, 'name'],
    [{ meter_identifier: 'x', group_id: 'a' }, 'group_id'],
    [{ meter_identifier: 'x', group_id: 999999 }, 'group_id'],
    [{ meter_identifier: 'x', rollover_max: -1 }, 'rollover_max'],
    [{ meter_identifier: 'x', expected_interval_minutes: 1.5 }, 'expected_interval_minutes'],
    [{ meter_identifier: 'x', pulse_weight: 1 }, 'pulse_unit'],
    [{ meter_identifier: 'x', pulse_unit: 'l' }, 'pulse_weight'],
    [{ meter_identifier: 'x', pulse_weight: 0, pulse_unit: 'l' }, 'pulse_weight'],
    [{ meter_identifier: 'x', display_unit: 'kwh' }, 'display_unit'],
    [{ meter_identifier: 'x', bogus: 1 }, 'bogus'],
    [{ meter_identifier: 'x', profile: 'nope' }, 'profile'],
    [{ meter_identifier: 'M-100' }, 'meter_identifier'],
  ]
  for (const [body, field] of cases) {
    const r = await s.call('POST', '/api/v1/meters', { token: a.token, body })
    t.equal(r.status, 422, JSON.stringify(body))
    t.ok(r.body.errors?.[field], `${JSON.stringify(body)} names ${field}: ${r.text}`)
  }
  const notJson = await s.call('POST', '/api/v1/meters', { token: a.token, raw: '{' })
  t.equal(notJson.status, 422)
  const arr = await s.call('POST', '/api/v1/meters', { token: a.token, body: [1] })
  t.equal(arr.status, 422)
  // another workspace's group is an unknown id
  const g = await s.call('POST', '/api/v1/meterGroups', {
    token: other.token,
    body: { name: 'theirs' },
  })
  const x = await s.call('POST', '/api/v1/meters', {
    token: a.token,
    body: { meter_identifier: 'x', group_id: g.body.data.id },
  })
  t.equal(x.status, 422)
  t.ok(x.body.errors.group_id)
})

t.test('create with a profile key confirms it', async (t) => {
  const m = await createMeter(s, a.token, {
    meter_identifier: 'P-1',
    profile: 'pulse_counter',
    pulse_weight: 1,
    pulse_unit: 'l',
  })
  t.match(m.profile, { key: 'pulse_counter', needs_review: false })
})

t.test('list ordered by meter_identifier with group and status', async (t) => {
  const g = await s.call('POST', '/api/v1/meterGroups', {
    token: a.token,
    body: { name: 'Basement' },
  })
  const m = await createMeter(s, a.token, { meter_identifier: 'A-1', group_id: g.body.data.id })
  await insertStatus(s, a.workspaceId, m.id, '2025-01-01T00:00:00Z', ['LEAK'], ['leak'])
  await insertStatus(s, a.workspaceId, m.id, '2025-01-02T00:00:00Z', [], [])
  const r = await s.call('GET', '/api/v1/meters', { token: a.token })
  t.equal(r.status, 200)
  const ids = r.body.data.map((x: any) => x.meter_identifier)
  t.same(ids, [...ids].sort())
  const a1 = r.body.data.find((x: any) => x.meter_identifier === 'A-1')
  t.same(a1.group, { id: g.body.data.id, name: 'Basement' })
  t.same(a1.status, { statuses: [], reported_at: '2025-01-02T00:00:00.000Z' })
  const o = await s.call('GET', '/api/v1/meters', { token: other.token })
  t.same(o.body.data, [], 'tenants never see each other')
})

t.test('plan limit: 402 rejected_plan_limit, counts operational meters only', async (t) => {
  const w = await s.tenant({ workspace: { plan_meter_limit: 2 } })
  await createMeter(s, w.token, { meter_identifier: 'a' })
  const b = await createMeter(s, w.token, { meter_identifier: 'b' })
  const r = await s.call('POST', '/api/v1/meters', {
    token: w.token,
    body: { meter_identifier: 'c' },
  })
  t.equal(r.status, 402)
  t.equal(r.body.reason, 'rejected_plan_limit')
  t.ok(r.body.message)
  // a non-operational meter no longer counts
  const m = await s.app.parts.meters.byId(w.workspaceId, b.id)
  await s.app.parts.meters.save({ ...m!, lifecycle_state: 'inactive' })
  const ok = await s.call('POST', '/api/v1/meters', {
    token: w.token,
    body: { meter_identifier: 'c' },
  })
  t.equal(ok.status, 201)
})

t.test(
  'plan limit holds under concurrent creates, and a raised limit applies at once',
  async (t) => {
    const w = await s.tenant({ workspace: { plan_meter_limit: 5 } })
    const create = (id: string) =>
      s.call('POST', '/api/v1/meters', { token: w.token, body: { meter_identifier: id } })
    const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => create(`par-${i}`)))
    t.equal(rs.filter((r) => r.status === 201).length, 5, 'exactly the limit is created')
    t.equal(rs.filter((r) => r.status === 402).length, 7)
    const raised = await s.call('PATCH', `/admin/v1/workspaces/${w.workspaceId}`, {
      token: s.adminToken,
      body: { plan_meter_limit: 6 },
    })
    t.equal(raised.status, 200)
    t.equal((await create('par-late')).status, 201, 'the new limit is read, not a cached one')
    t.equal((await create('par-later')).status, 402)
  },
)

t.test('a created meter is answered with its group and no status', async (t) => {
  const g = await s.call('POST', '/api/v1/meterGroups', {
    token: a.token,
    body: { name: 'Attic' },
  })
  const r = await s.call('POST', '/api/v1/meters', {
    token: a.token,
    body: { meter_identifier: 'GR-1', group_id: g.body.data.id },
  })
  t.equal(r.status, 201)
  t.same(r.body.data.group, { id: g.body.data.id, name: 'Attic' })
  t.equal(r.body.data.status, null)
  await insertStatus(s, a.workspaceId, r.body.data.id, '2025-01-03T00:00:00Z', ['LEAK'], ['leak'])
  const p = await s.call('PATCH', `/api/v1/meters/${r.body.data.id}`, {
    token: a.token,
    body: { name: 'renamed' },
  })
  t.same(p.body.data.group, { id: g.body.data.id, name: 'Attic' })
  t.same(p.body.data.status, { statuses: ['leak'], reported_at: '2025-01-03T00:00:00.000Z' })
})

t.test('the hourly provisioning cap does not apply to POST /meters', async (t) => {
  const w = await s.tenant({ workspace: { provision_cap_per_hour: 1 } })
  for (const id of ['x1', 'x2', 'x3']) {
    const r = await s.call('POST', '/api/v1/meters', {
      token: w.token,
      body: { meter_identifier: id },
    })
    t.equal(r.status, 201)
  }
})

t.test('patch: only sent fields change; warning only on interpretation change', async (t) => {
  const m = await createMeter(s, a.token, {
    meter_identifier: 'PT-1',
    name: 'n',
    unit: 'kwh',
    expected_interval_minutes: 15,
  })
  let r = await s.call('PATCH', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { name: 'renamed' },
  })
  t.equal(r.status, 200)
  t.match(r.body.data, { name: 'renamed', unit: 'kwh', expected_interval_minutes: 15 })
  t.equal(r.body.warning, null)
  r = await s.call('PATCH', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { unit: 'kwh', expected_interval_minutes: 60 },
  })
  t.equal(r.body.warning, null, 'same unit is no change')
  r = await s.call('PATCH', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { unit: 'wh', rollover_max: 1000 },
  })
  t.same(r.body.warning.changed, ['unit', 'rollover_max'])
  r = await s.call('PATCH', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { display_unit: 'kwh' },
  })
  t.equal(r.status, 200)
  t.equal(r.body.data.display_unit, 'kwh')
  r = await s.call('PATCH', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { display_unit: 'm3' },
  })
  t.equal(r.status, 422)
  t.ok(r.body.errors.display_unit)
  r = await s.call('PATCH', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { display_unit: null },
  })
  t.equal(r.body.data.display_unit, null)
  r = await s.call('PATCH', `/api/v1/meters/${m.id}`, { token: a.token, body: { pulse_weight: 2 } })
  t.equal(r.status, 422)
  t.ok(r.body.errors.pulse_weight)
  r = await s.call('PATCH', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { pulse_weight: 2, pulse_unit: 'wh' },
  })
  t.same(r.body.warning.changed, ['pulse_weight', 'pulse_unit'])
})

t.test('patch: 404 for unknown/other workspace, 422 for bad input', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'PT-2' })
  t.equal(
    (await s.call('PATCH', '/api/v1/meters/999999', { token: a.token, body: {} })).status,
    404,
  )
  t.equal(
    (await s.call('PATCH', `/api/v1/meters/${m.id}`, { token: other.token, body: { name: 'x' } }))
      .status,
    404,
  )
  const bad = await s.call('PATCH', '/api/v1/meters/abc', { token: a.token, body: {} })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors.meter)
  for (const [body, field] of [
    [{ unit: 'x' }, 'unit'],
    [{ meter_identifier: 'PT-1' }, 'meter_identifier'],
    [{ group_id: 99999 }, 'group_id'],
    [{ display_unit: 'kwh' }, 'display_unit'],
    [{ wat: 1 }, 'wat'],
    [{ expected_interval_minutes: 0 }, 'expected_interval_minutes'],
  ] as [unknown, string][]) {
    const r = await s.call('PATCH', `/api/v1/meters/${m.id}`, { token: a.token, body })
    t.equal(r.status, 422, JSON.stringify(body))
    t.ok(r.body.errors?.[field], `${JSON.stringify(body)} names ${field}`)
  }
})

t.test('delete: confirmation, readings range, everything gone afterwards', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'DEL-1', unit: 'kwh' })
  const keep = await createMeter(s, a.token, { meter_identifier: 'KEEP-1', unit: 'kwh' })
  await insertReadings(s, a.workspaceId, [
    { meter: m.id, at: '2025-03-01T00:00:00Z', value: 1 },
    { meter: m.id, at: '2025-03-01T01:00:00Z', value: 2 },
    { meter: m.id, at: '2025-03-01T01:00:00Z', value: 2, flags: ['implausible_rate'] }, // new version
    { meter: m.id, at: '2025-03-02T05:00:00Z', value: 3 },
    { meter: keep.id, at: '2025-03-01T00:00:00Z', value: 9 },
  ])
  await insertStatus(s, a.workspaceId, m.id, '2025-03-01T00:00:00Z', ['x'], ['error'])
  const miss = await s.call('DELETE', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { confirm_meter_identifier: 'DEL-2' },
  })
  t.equal(miss.status, 422)
  t.ok(miss.body.errors.confirm_meter_identifier)
  const none = await s.call('DELETE', `/api/v1/meters/${m.id}`, { token: a.token })
  t.equal(none.status, 422)
  t.ok(none.body.errors.confirm_meter_identifier)
  t.equal(
    (
      await s.call('DELETE', `/api/v1/meters/${m.id}`, {
        token: other.token,
        body: { confirm_meter_identifier: 'DEL-1' },
      })
    ).status,
    404,
  )
  const r = await s.call('DELETE', `/api/v1/meters/${m.id}`, {
    token: a.token,
    body: { confirm_meter_identifier: 'DEL-1' },
  })
  t.equal(r.status, 200)
  t.same(r.body.data, {
    deleted: true,
    id: m.id,
    meter_identifier: 'DEL-1',
    readings_deleted: 3,
    readings_from: '2025-03-01T00:00:00.000Z',
    readings_to: '2025-03-02T05:00:00.000Z',
  })
  const q = await s.call(
    'GET',
    `/api/v1/readings${qs({ meter_id: m.id, from: '2025-03-01', to: '2025-03-03' })}`,
    { token: a.token },
  )
  t.equal(q.status, 422, 'deleted meter is unknown')
  const left = await s.app.parts.store.sql.query<{ c: string }>(
    `SELECT (SELECT count() FROM readings WHERE meter_id = ${m.id}) + (SELECT count() FROM status_reports WHERE meter_id = ${m.id}) + (SELECT count() FROM readings_hourly WHERE meter_id = ${m.id}) AS c`,
  )
  t.equal(Number(left[0]!.c), 0)
  const k = await s.call(
    'GET',
    `/api/v1/readings${qs({ meter_id: keep.id, from: '2025-03-01', to: '2025-03-03', aggregate: 'daily' })}`,
    { token: a.token },
  )
  t.equal(k.body.data[0].sum, 9, 'other meters untouched')
  const empty = await createMeter(s, a.token, { meter_identifier: 'DEL-E' })
  const e = await s.call('DELETE', `/api/v1/meters/${empty.id}`, {
    token: a.token,
    body: { confirm_meter_identifier: 'DEL-E' },
  })
  t.match(e.body.data, { readings_deleted: 0, readings_from: null, readings_to: null })
  const list = await s.call('GET', '/api/v1/meters', { token: a.token })
  t.notOk(list.body.data.some((x: any) => x.id === m.id))
})

t.test('scopes and groups.manage', async (t) => {
  const user = await s.admin('POST', `/workspaces/${a.workspaceId}/users`, {
    email: 'r@x.io',
    permissions: [],
  })
  const readTok = (
    await s.admin('POST', `/workspaces/${a.workspaceId}/tokens`, {
      user_id: user.data.id,
      scopes: ['data:read'],
    })
  ).data.token
  const writeNoPerm = (
    await s.admin('POST', `/workspaces/${a.workspaceId}/tokens`, {
      user_id: user.data.id,
      scopes: ['masterdata:write'],
    })
  ).data.token
  t.equal((await s.call('GET', '/api/v1/meters')).status, 401)
  t.equal((await s.call('GET', '/api/v1/meters', { token: writeNoPerm })).status, 403)
  t.equal((await s.call('GET', '/api/v1/meters', { token: readTok })).status, 200)
  t.equal(
    (await s.call('POST', '/api/v1/meters', { token: readTok, body: { meter_identifier: 'z' } }))
      .status,
    403,
  )
  t.equal(
    (
      await s.call('POST', '/api/v1/meters', {
        token: writeNoPerm,
        body: { meter_identifier: 'z' },
      })
    ).status,
    403,
  )
  t.equal((await s.call('PATCH', '/api/v1/meters/1', { token: writeNoPerm, body: {} })).status, 403)
  t.equal(
    (await s.call('DELETE', '/api/v1/meters/1', { token: writeNoPerm, body: {} })).status,
    403,
  )
})
