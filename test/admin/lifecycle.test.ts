// Meter lifecycle and exchanges through the admin API (issue 14, "Also"): putting a meter
// back to `active` counts against the plan limit, and recording an exchange flags the
// stored readings again at once, without a backfill.
import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const call = (method: string, path: string, body?: unknown) =>
  s.call(method, `/admin/v1${path}`, { token: s.adminToken, body })

t.test('reactivating a meter checks the plan limit', async (t) => {
  const { token } = await s.tenant({ workspace: { plan_meter_limit: 2 } })
  const create = (id: string) =>
    s.call('POST', '/api/v1/meters', { token, body: { meter_identifier: id } })
  const a = (await create('a')).body.data.id
  t.equal((await create('b')).status, 201)
  t.equal((await call('PUT', `/meters/${a}/lifecycle`, { state: 'removed' })).status, 200)
  t.equal((await create('c')).status, 201, 'the retired meter freed its slot')
  const back = await call('PUT', `/meters/${a}/lifecycle`, { state: 'active' })
  t.equal(back.status, 402, back.text)
  t.equal(back.body.reason, 'rejected_plan_limit')
  t.type(back.body.message, 'string')
  const list = (await s.call('GET', '/api/v1/meters', { token })).body.data
  t.equal(list.find((m: any) => m.id === a).lifecycle.state, 'removed', 'nothing changed')
  // Another state than active is always allowed; an active meter set active again is a no-op.
  const b = list.find((m: any) => m.meter_identifier === 'b').id
  t.equal((await call('PUT', `/meters/${b}/lifecycle`, { state: 'active' })).status, 200)
  t.equal((await call('PUT', `/meters/${b}/lifecycle`, { state: 'removed' })).status, 200)
  const again = await call('PUT', `/meters/${a}/lifecycle`, { state: 'active' })
  t.equal(again.status, 200, again.text)
  t.equal(again.body.data.lifecycle.state, 'active')
})

t.test('recording an exchange flags the stored readings again at once', async (t) => {
  const { token } = await s.tenant()
  const base = Date.now() - 6 * 3600_000
  const at = (min: number) => new Date(base + min * 60_000).toISOString()
  const saldo = (min: number, value: number) => ({
    meter: 'ex-1',
    kind: 'saldo',
    value,
    unit: 'kwh',
    recorded_at: at(min),
  })
  const r = await s.call('POST', '/api/v1/reportData', {
    token,
    body: { readings: [saldo(0, 1000), saldo(15, 1010), saldo(30, 5), saldo(45, 7)] },
  })
  t.equal(r.status, 201, r.text)
  const id = (await s.call('GET', '/api/v1/meters', { token })).body.data[0].id
  const flags = async () =>
    (
      await s.app.parts.store.sql.query<{ f: string[] }>(
        `SELECT quality_flags AS f FROM readings FINAL WHERE meter_id = ${id} ORDER BY recorded_at`,
      )
    ).map((x) => [...x.f])
  t.same((await flags())[2], ['saldo_decrease'], 'before: an unexplained decrease')
  const ex = await call('POST', `/meters/${id}/exchanges`, {
    exchanged_at: at(20),
    old_final_value: 1012,
    new_initial_value: 0,
  })
  t.equal(ex.status, 201, ex.text)
  t.same(await flags(), [[], [], ['meter_exchange'], []], 'after: the exchange, no decrease')
  // The meter's actor agrees: a later reading of the new device is normal.
  const next = await s.call('POST', '/api/v1/reportData', {
    token,
    body: { readings: [saldo(60, 9)] },
  })
  t.equal(next.status, 201, next.text)
  t.same((await flags())[4], [])
})
