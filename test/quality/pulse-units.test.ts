// Pulse meters (issue 14, items 1 and 6): the backfill converts stored pulse readings again
// from their raw payload with the meter's current weight, and the actor, the backfill and
// derived consumption read rollover_max in the same unit (the pulse unit when the meter has
// no unit of its own).
import t from 'tap'
import { transferPayload } from '../../src/scheduler/transfers.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const { token, workspaceId: ws } = await s.tenant()
const base = Date.now() - 6 * 3600_000
const at = (min: number) => new Date(base + min * 60_000).toISOString()
const report = (readings: unknown[]) =>
  s.call('POST', '/api/v1/reportData', { token, body: { readings } })
const pulse = (meter: string, min: number, payload: Record<string, number>) => ({
  meter,
  profile: 'pulse_counter',
  payload,
  recorded_at: at(min),
})
const rows = (meterId: number) =>
  s.app.parts.store.sql.query<any>(
    `SELECT kind, value, unit, canonical_value, canonical_unit, quality_flags
     FROM readings FINAL WHERE meter_id = ${meterId} ORDER BY recorded_at, kind`,
  )
async function createMeter(body: Record<string, unknown>): Promise<number> {
  const r = await s.call('POST', '/api/v1/meters', { token, body })
  if (r.status !== 201) throw new Error(r.text)
  return r.body.data.id
}
const backfill = (meterId: number) =>
  s.admin('POST', '/jobs/backfill-reading-quality', { meter_id: meterId })

t.test('item 1: backfill recomputes pulse readings from the raw payload', async (t) => {
  const id = await createMeter({
    meter_identifier: 'pulse-weight',
    profile: 'pulse_counter',
    pulse_weight: 1,
    pulse_unit: 'l',
  })
  const r = await report([
    pulse('pulse-weight', 0, { pulses: 1000 }),
    pulse('pulse-weight', 15, { pulse_delta: 500 }),
  ])
  t.equal(r.status, 201, r.text)
  t.match(await rows(id), [
    { kind: 'saldo', value: 1000, unit: 'l', canonical_value: 1, canonical_unit: 'm3' },
    { kind: 'consumption', value: 500, unit: 'l', canonical_value: 0.5 },
  ])
  const p = await s.call('PATCH', `/api/v1/meters/${id}`, {
    token,
    body: { pulse_weight: 2, pulse_unit: 'm3' },
  })
  t.equal(p.status, 200, p.text)
  const b = await backfill(id)
  t.equal(b.data.readings_rewritten, 2)
  t.match(await rows(id), [
    { kind: 'saldo', value: 2000, unit: 'm3', canonical_value: 2000, canonical_unit: 'm3' },
    { kind: 'consumption', value: 1000, unit: 'm3', canonical_value: 1000 },
  ])
  t.equal((await backfill(id)).data.readings_rewritten, 0, 'a second run changes nothing')
  // Raw readings answer with the recomputed values.
  const q = await s.call('GET', `/api/v1/readings?meter_id=${id}&kind=saldo&from=${at(-60)}`, {
    token,
  })
  t.equal(q.body.data[0].canonical_value, 2000, q.text)
})

t.test('item 6: one unit rule for rollover_max on a pulse meter without a unit', async (t) => {
  // A litre pulse counter wrapping at 10,000 l (rollover_max is in the pulse unit).
  const id = await createMeter({
    meter_identifier: 'pulse-wrap',
    profile: 'pulse_counter',
    pulse_weight: 1,
    pulse_unit: 'l',
    rollover_max: 10_000,
  })
  const r = await report([
    pulse('pulse-wrap', 0, { pulses: 9990 }),
    pulse('pulse-wrap', 15, { pulses: 10 }),
  ])
  t.equal(r.status, 201, r.text)
  const stored = await rows(id)
  t.same(stored[1].quality_flags, ['rollover_wrap'], 'the actor sees a wrap')
  const d = await s.call(
    'GET',
    `/api/v1/readings?meter_id=${id}&derive=consumption&from=${at(-60)}&to=${at(60)}`,
    { token },
  )
  t.equal(d.status, 200, d.text)
  t.equal(d.body.data.length, 1)
  t.equal(d.body.data[0].rollover, true, 'derive sees the same wrap')
  t.ok(Math.abs(d.body.data[0].consumption - 0.02) < 1e-9, String(d.body.data[0].consumption))
  t.equal((await backfill(id)).data.readings_rewritten, 0, 'the backfill agrees with the actor')
  t.same((await rows(id))[1].quality_flags, ['rollover_wrap'])
  // Daily transfers bridge the same wrap: the day holding the second reading gets 0.02 m³.
  const DAY = 86_400_000
  const dayAfter = Math.floor((base + 15 * 60_000) / DAY) * DAY + DAY
  const payload = await transferPayload(
    s.app.parts,
    {
      id: 1,
      workspace_id: ws,
      url: 'http://127.0.0.1:9/',
      cron: '0 2 * * *',
      group_id: null,
      last_run_at: null,
      last_status: null,
      created_at: new Date().toISOString(),
    },
    dayAfter + 3600_000,
  )
  const row = payload.meters.find((m: any) => m.meter_identifier === 'pulse-wrap')!
  t.equal(row.unit, 'm3')
  t.ok(Math.abs((row.consumption ?? NaN) - 0.02) < 1e-9, `transfer: ${JSON.stringify(row)}`)
})

t.test('item 6: exchange baselines on a pulse meter are in the pulse unit too', async (t) => {
  const id = await createMeter({
    meter_identifier: 'pulse-exchange',
    profile: 'pulse_counter',
    pulse_weight: 1,
    pulse_unit: 'l',
  })
  await report([pulse('pulse-exchange', 0, { pulses: 5000 })])
  await s.admin('POST', `/meters/${id}/exchanges`, {
    exchanged_at: at(10),
    old_final_value: 5500,
    new_initial_value: 0,
  })
  await report([pulse('pulse-exchange', 20, { pulses: 300 })])
  const stored = await rows(id)
  t.same(stored[1].quality_flags, ['meter_exchange'], JSON.stringify(stored))
  const d = await s.call(
    'GET',
    `/api/v1/readings?meter_id=${id}&derive=consumption&from=${at(-60)}&to=${at(60)}`,
    { token },
  )
  t.equal(d.body.data[0].exchange, true)
  t.ok(Math.abs(d.body.data[0].consumption - 0.8) < 1e-9, String(d.body.data[0].consumption))
})
