// Admin: meter lifecycle, profile confirmation, wM-Bus key, exchanges; device profiles.
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { newMeter, type NewMeter } from '../../src/store/meter-row.js'
import { startTestServer } from '../helpers/server.js'
import { countInserts } from '../helpers/store.js'

const clock = new ManualClock(Date.parse('2025-03-01T12:00:00Z'))
const srv = await startTestServer({}, { clock })
t.teardown(() => srv.close())
const { workspaceId: ws } = await srv.tenant()
const s = srv.app.parts

export const meterFields = (identifier: string, extra: Partial<NewMeter> = {}): NewMeter =>
  newMeter(identifier, { unit: 'kwh', profile_needs_review: true, ...extra })

async function meter(id: string) {
  const r = await s.meters.create(ws, meterFields(id))
  if (!('meter' in r)) throw new Error('refused')
  return r.meter
}
const call = (method: string, path: string, body?: unknown) =>
  srv.call(method, `/admin/v1${path}`, { token: srv.adminToken, body })

t.test('lifecycle: state, operational = active only, changed_at set', async (t) => {
  const m = await meter('life-1')
  for (const state of ['planned', 'inactive', 'removed', 'archived', 'active']) {
    clock.advance(1000)
    const r = await call('PUT', `/meters/${m.id}/lifecycle`, { state })
    t.equal(r.status, 200)
    t.equal(r.body.data.lifecycle.state, state)
    t.equal(r.body.data.lifecycle.operational, state === 'active')
    t.equal(r.body.data.lifecycle.changed_at, new Date(clock.now()).toISOString())
    t.equal(r.body.data.meter_identifier, 'life-1')
    t.equal((await s.meters.byId(ws, m.id))!.lifecycle_state, state)
  }
  let r = await call('PUT', `/meters/${m.id}/lifecycle`, { state: 'broken' })
  t.equal(r.status, 422)
  t.ok(r.body.errors.state)
  r = await call('PUT', `/meters/${m.id}/lifecycle`, {})
  t.equal(r.status, 422)
  t.ok(r.body.errors.state)
  r = await call('PUT', `/meters/999999/lifecycle`, { state: 'active' })
  t.equal(r.status, 404)
  r = await call('PUT', `/meters/abc/lifecycle`, { state: 'active' })
  t.equal(r.status, 404)
  r = await srv.call('PUT', `/admin/v1/meters/${m.id}/lifecycle`, { body: { state: 'active' } })
  t.equal(r.status, 401)
})

t.test('profiles: built-ins and workspace profiles; versions; validation', async (t) => {
  let r = await call('GET', `/workspaces/${ws}/profiles`)
  t.equal(r.status, 200)
  t.same(
    r.body.data.map((p: any) => p.key),
    ['generic', 'wmbus_oms', 'pulse_counter'],
  )
  const body = {
    key: 'acme-w1',
    name: 'Acme W1',
    kind: 'saldo',
    unit: 'l',
    status_map: { LEAK: 'leak', BAT: 'low_battery' },
  }
  r = await call('POST', `/workspaces/${ws}/profiles`, body)
  t.equal(r.status, 201)
  t.match(r.body.data, { key: 'acme-w1', version: 1, name: 'Acme W1' })
  r = await call('POST', `/workspaces/${ws}/profiles`, { ...body, name: 'Acme W1 rev B' })
  t.equal(r.body.data.version, 2)
  const decoder = {
    encoding: 'hex',
    fields: [
      { name: 'value', type: 'u32', scale: 0.001 },
      { name: 'status', type: 'flags8', flags: ['LEAK'] },
    ],
  }
  r = await call('POST', `/workspaces/${ws}/profiles`, {
    key: 'acme-bin',
    name: 'Bin',
    kind: 'consumption',
    unit: 'wh',
    decoder,
  })
  t.equal(r.status, 201)
  r = await call('GET', `/workspaces/${ws}/profiles`)
  const acme = r.body.data.find((p: any) => p.key === 'acme-w1')
  t.equal(acme.version, 2)
  t.equal(acme.name, 'Acme W1 rev B')
  t.same(r.body.data.find((p: any) => p.key === 'acme-bin').decoder, decoder)

  const bad: [Record<string, unknown>, string][] = [
    [{ ...body, key: undefined }, 'key'],
    [{ ...body, key: 'has space' }, 'key'],
    [{ ...body, key: 'generic' }, 'key'],
    [{ ...body, name: '' }, 'name'],
    [{ ...body, kind: 'both' }, 'kind'],
    [{ ...body, unit: 'gallon' }, 'unit'],
    [{ ...body, status_map: { LEAK: 'flood' } }, 'status_map.LEAK'],
    [{ ...body, status_map: { LEAK: 3 } }, 'status_map.LEAK'],
    [
      { ...body, decoder: { encoding: 'hex', fields: [{ name: 'value', type: 'u7' }] } },
      'decoder.fields.0.type',
    ],
    [
      { ...body, decoder: { encoding: 'b32', fields: [{ name: 'value', type: 'u8' }] } },
      'decoder.encoding',
    ],
    [
      { ...body, decoder: { encoding: 'hex', fields: [{ name: 'other', type: 'u8' }] } },
      'decoder.fields',
    ],
    [{ ...body, colour: 1 }, 'colour'],
  ]
  for (const [b, key] of bad) {
    const x = await call('POST', `/workspaces/${ws}/profiles`, JSON.parse(JSON.stringify(b)))
    t.equal(x.status, 422, key)
    t.ok(x.body.errors?.[key], `${key} in ${JSON.stringify(x.body.errors)}`)
  }
  t.equal((await call('GET', `/workspaces/99999/profiles`)).status, 404)
  t.equal((await call('POST', `/workspaces/99999/profiles`, body)).status, 404)
})

t.test('profile assignment confirms; unknown key or version is 422', async (t) => {
  const m = await meter('prof-1')
  t.equal(m.profile_needs_review, true)
  let r = await call('PUT', `/meters/${m.id}/profile`, { key: 'generic' })
  t.equal(r.status, 200)
  t.same(r.body.data.profile, { key: 'generic', version: 1, name: 'Generic', needs_review: false })
  r = await call('PUT', `/meters/${m.id}/profile`, { key: 'acme-w1', version: 1 })
  t.same(r.body.data.profile, { key: 'acme-w1', version: 1, name: 'Acme W1', needs_review: false })
  r = await call('PUT', `/meters/${m.id}/profile`, { key: 'acme-w1' })
  t.same(r.body.data.profile.version, 2, 'newest version by default')
  r = await call('PUT', `/meters/${m.id}/profile`, { key: 'nope' })
  t.equal(r.status, 422)
  t.ok(r.body.errors.key)
  r = await call('PUT', `/meters/${m.id}/profile`, { key: 'acme-w1', version: 9 })
  t.equal(r.status, 422)
  t.ok(r.body.errors.version)
  r = await call('PUT', `/meters/${m.id}/profile`, { key: 'acme-w1', version: 0 })
  t.equal(r.status, 422)
  t.ok(r.body.errors.version)
  r = await call('PUT', `/meters/${m.id}/profile`, {})
  t.equal(r.status, 422)
  t.ok(r.body.errors.key)
  // Another workspace's profile is unknown here.
  const other = await srv.tenant()
  const om = (await s.meters.create(other.workspaceId, meterFields('o-1'))) as any
  r = await call('PUT', `/meters/${om.meter.id}/profile`, { key: 'acme-w1' })
  t.equal(r.status, 422)
})

t.test('wmbus-key: stored, never returned; null clears; bad keys 422', async (t) => {
  const m = await meter('wm-1')
  const key = '0123456789ABCDEF0123456789abcdef'
  let r = await call('PUT', `/meters/${m.id}/wmbus-key`, { key })
  t.equal(r.status, 200)
  t.same(r.body.data, { meter_id: m.id, has_key: true })
  t.notOk(r.text.toLowerCase().includes(key.toLowerCase()))
  t.equal((await s.meters.byId(ws, m.id))!.wmbus_key, key.toLowerCase())
  const view = await call('PUT', `/meters/${m.id}/lifecycle`, { state: 'active' })
  t.notOk(view.text.toLowerCase().includes(key.toLowerCase()), 'the Meter object does not carry it')
  r = await call('PUT', `/meters/${m.id}/wmbus-key`, { key: '0011223344556677' })
  t.same(r.body.data, { meter_id: m.id, has_key: true }, 'an 8-byte (DES) key is accepted')
  r = await call('PUT', `/meters/${m.id}/wmbus-key`, { key: null })
  t.same(r.body.data, { meter_id: m.id, has_key: false })
  for (const bad of ['abc', '0123456789abcdef0123456789abcdeg', 12, undefined]) {
    r = await call('PUT', `/meters/${m.id}/wmbus-key`, bad === undefined ? {} : { key: bad })
    t.equal(r.status, 422)
    t.ok(r.body.errors.key)
  }
})

t.test('wmbus-key: concurrent calls share INSERTs, each stored', async (t) => {
  const ms = await Promise.all(Array.from({ length: 24 }, (_, i) => meter(`wm-many-${i}`)))
  const sql = s.store.sql
  const meterInserts = countInserts(t, sql, 'meters')
  const key = (i: number) => i.toString(16).padStart(32, '0')
  const rs = await Promise.all(
    ms.map((m, i) => call('PUT', `/meters/${m.id}/wmbus-key`, { key: key(i) })),
  )
  t.same(
    rs.map((r) => r.status),
    ms.map(() => 200),
  )
  t.ok(meterInserts() < ms.length / 2, `${ms.length} keys stored by ${meterInserts()} INSERTs`)
  const stored = await sql.query<{ id: string; wmbus_key: string }>(
    'SELECT id, wmbus_key FROM meters FINAL WHERE id IN {ids:Array(UInt64)} ORDER BY id',
    { ids: ms.map((m) => m.id) },
  )
  t.same(
    stored.map((r) => [Number(r.id), r.wmbus_key]),
    ms.map((m, i) => [m.id, key(i)]).sort((a, b) => (a[0] as number) - (b[0] as number)),
    'every key is in the store',
  )
})

t.test('exchanges: recorded with baselines or without; bad input 422', async (t) => {
  const m = await meter('ex-1')
  let r = await call('POST', `/meters/${m.id}/exchanges`, {
    exchanged_at: '2025-02-01T08:00:00+01:00',
    old_final_value: 1234.5,
    new_initial_value: 0,
  })
  t.equal(r.status, 201)
  t.match(r.body.data, {
    meter_id: m.id,
    exchanged_at: '2025-02-01T07:00:00.000Z',
    old_final_value: 1234.5,
    new_initial_value: 0,
  })
  r = await call('POST', `/meters/${m.id}/exchanges`, { exchanged_at: '2025-02-10T00:00:00Z' })
  t.equal(r.status, 201)
  t.equal(r.body.data.old_final_value, null)
  r = await call('GET', `/meters/${m.id}/exchanges`)
  t.equal(r.body.data.length, 2)
  const bad: [Record<string, unknown>, string][] = [
    [{}, 'exchanged_at'],
    [{ exchanged_at: 'soon' }, 'exchanged_at'],
    [{ exchanged_at: '2025-02-30T00:00:00Z' }, 'exchanged_at'],
    [{ exchanged_at: '2025-02-01T00:00:00Z', old_final_value: 'x' }, 'old_final_value'],
    [{ exchanged_at: '2025-02-01T00:00:00Z', new_initial_value: true }, 'new_initial_value'],
    [{ exchanged_at: '2025-02-01T00:00:00Z', extra: 1 }, 'extra'],
  ]
  for (const [b, key] of bad) {
    const x = await call('POST', `/meters/${m.id}/exchanges`, b)
    t.equal(x.status, 422, key)
    t.ok(x.body.errors?.[key], `${key} in ${JSON.stringify(x.body.errors)}`)
  }
  t.equal(
    (await call('POST', `/meters/999999/exchanges`, { exchanged_at: '2025-02-01T00:00:00Z' }))
      .status,
    404,
  )
  const nj = await srv.call('POST', `/admin/v1/meters/${m.id}/exchanges`, {
    token: srv.adminToken,
    raw: '{',
  })
  t.equal(nj.status, 422)
  t.ok(nj.body.errors.body)
})
