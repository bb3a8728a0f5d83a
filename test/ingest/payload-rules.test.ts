// Payload rules of POST /reportData that are easy to get wrong (issue 14, items 2, 3, 4, 8):
// non-finite decoded values, decoder profiles without a status field, years before the
// store's range, and a shape-B item without its payload.
import t from 'tap'
import { statusCurrent } from '../../src/store/rollup-feed.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const { token, workspaceId } = await s.tenant()
const at = (min: number) => new Date(Date.now() - 3600_000 + min * 60_000).toISOString()
const report = (readings: unknown[]) =>
  s.call('POST', '/api/v1/reportData', { token, body: { readings } })
// Status reports ride on readings rows to their table (src/store/status.ts): written first.
const q = async <T = any>(sql: string) => {
  await statusCurrent(s.app.parts.store.sql)
  return s.app.parts.store.sql.query<T>(sql)
}
async function counts() {
  const [r] = await q(
    `SELECT (SELECT count() FROM readings) AS readings, (SELECT count() FROM status_reports) AS reports`,
  )
  return { readings: Number(r.readings), reports: Number(r.reports) }
}

await s.admin('POST', `/workspaces/${workspaceId}/profiles`, {
  key: 'float_meter',
  name: 'f32 register, no status field',
  kind: 'saldo',
  unit: 'm3',
  decoder: { encoding: 'hex', fields: [{ name: 'value', type: 'f32' }] },
})
await s.admin('POST', `/workspaces/${workspaceId}/profiles`, {
  key: 'acme_obj',
  name: 'object form',
  kind: 'saldo',
  unit: 'm3',
})

t.test('item 2: NaN and ±Infinity decoded from a frame are a 422 naming the payload', async (t) => {
  for (const frame of ['0000c07f', '0000807f', '000080ff']) {
    const before = await counts()
    const r = await report([
      { meter: 'f-ok', profile: 'float_meter', payload: '00004841', recorded_at: at(0) },
      { meter: 'f-nan', profile: 'float_meter', payload: frame, recorded_at: at(1) },
    ])
    t.equal(r.status, 422, `${frame}: ${r.text}`)
    t.ok(r.body.errors?.['readings.1.payload'], JSON.stringify(r.body.errors))
    t.same(await counts(), before, 'nothing of the batch stored')
  }
  const ok = await report([
    { meter: 'f-ok', profile: 'float_meter', payload: '00004841', recorded_at: at(0) },
  ])
  t.equal(ok.status, 201, ok.text)
  const m = (await s.app.parts.meters.byIdentifier(workspaceId, 'f-ok'))!
  const [row] = await q(`SELECT value FROM readings FINAL WHERE meter_id = ${m.id}`)
  t.equal(row.value, 12.5)
})

t.test('item 3: a decoder profile without a status field makes no status report', async (t) => {
  const r = await report([
    { meter: 'f-nostatus', profile: 'float_meter', payload: '00004841', recorded_at: at(2) },
    { meter: 'f-nostatus', profile: 'float_meter', payload: '00005041', recorded_at: at(3) },
  ])
  t.equal(r.status, 201, r.text)
  const m = (await s.app.parts.meters.byIdentifier(workspaceId, 'f-nostatus'))!
  const [n] = await q(`SELECT count() AS n FROM status_reports WHERE meter_id = ${m.id}`)
  t.equal(Number(n.n), 0, 'no status report')
  const list = await s.call('GET', '/api/v1/meters', { token })
  const view = list.body.data.find((x: any) => x.id === m.id)
  t.equal(view.status, null, 'the meter never reported status')
  // The object form without `status` behaves the same.
  const o = await report([
    { meter: 'o-nostatus', profile: 'acme_obj', payload: { value: 3 }, recorded_at: at(2) },
  ])
  t.equal(o.status, 201, o.text)
  const mo = (await s.app.parts.meters.byIdentifier(workspaceId, 'o-nostatus'))!
  const [no] = await q(`SELECT count() AS n FROM status_reports WHERE meter_id = ${mo.id}`)
  t.equal(Number(no.n), 0)
})

t.test('item 4: years before the store range are refused, never shifted', async (t) => {
  for (const when of [
    '0050-06-01T00:00:00.000Z',
    '0050-06-01T00:00:00Z',
    '0000-01-01T00:00:00.000Z',
    '1850-01-01T00:00:00.000Z',
    '0099-12-31T23:59:59+01:00',
  ]) {
    const before = await counts()
    const r = await report([
      { meter: 'y-old', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: when },
    ])
    t.equal(r.status, 422, `${when}: ${r.text}`)
    t.ok(r.body.errors?.['readings.0.recorded_at'], JSON.stringify(r.body.errors))
    t.same(await counts(), before)
  }
  const r = await report([
    { meter: 'y-ok', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: '1900-01-01T00:00:00Z' },
  ])
  t.equal(r.status, 201, r.text)
  const m = (await s.app.parts.meters.byIdentifier(workspaceId, 'y-ok'))!
  const [row] = await q(
    `SELECT toUnixTimestamp64Milli(recorded_at) AS ms FROM readings FINAL WHERE meter_id = ${m.id}`,
  )
  t.equal(Number(row.ms), Date.UTC(1900, 0, 1), 'stored exactly')
})

t.test('item 8: a shape-B item without payload names readings.<i>.payload', async (t) => {
  for (const profile of ['acme_obj', 'float_meter', 'pulse_counter', 'wmbus_oms']) {
    const r = await report([{ meter: 'b-nopayload', profile, recorded_at: at(0) }])
    t.equal(r.status, 422, r.text)
    t.same(Object.keys(r.body.errors), ['readings.0.payload'], `${profile}: ${r.text}`)
  }
})
