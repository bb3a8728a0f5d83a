// display_unit (issue 14, item 11): raw, aggregate and derived rows carry their values in
// the meter's display unit next to the canonical ones; a pulse meter without a unit takes
// a display_unit of its pulse unit's family (docs/query.md, "Display unit").
import t from 'tap'
import { insertReadings } from './helpers.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const { token, workspaceId: ws } = await s.tenant()
const T0 = Date.UTC(2026, 0, 1)
const H = 3600_000
const iso = (h: number) => new Date(T0 + h * H).toISOString()
const create = async (body: Record<string, unknown>) => {
  const r = await s.call('POST', '/api/v1/meters', { token, body })
  if (r.status !== 201) throw new Error(r.text)
  return r.body.data.id as number
}
const patch = (id: number, body: Record<string, unknown>) =>
  s.call('PATCH', `/api/v1/meters/${id}`, { token, body })
const get = (q: string) =>
  s.call('GET', `/api/v1/readings?${q}&from=${iso(-1)}&to=${iso(30)}`, { token })

const water = await create({ meter_identifier: 'water-1', unit: 'm3' })
await insertReadings(s, ws, [
  { meter: water, kind: 'saldo', at: T0, value: 1.1, unit: 'm3', canonicalUnit: 'm3' },
  { meter: water, kind: 'saldo', at: T0 + H, value: 1.35, unit: 'm3', canonicalUnit: 'm3' },
])

t.test('without display_unit the display values are the canonical ones', async (t) => {
  const r = await get(`meter_id=${water}`)
  t.equal(r.status, 200, r.text)
  t.match(r.body.data[0], { canonical_value: 1.1, display_value: 1.1, display_unit: 'm3' })
})

t.test('display_unit l: raw, aggregate and derive rows in litres', async (t) => {
  const p = await patch(water, { display_unit: 'l' })
  t.equal(p.status, 200, p.text)
  t.equal(p.body.data.display_unit, 'l')
  const raw = await get(`meter_id=${water}`)
  t.match(raw.body.data[0], {
    canonical_value: 1.1,
    canonical_unit: 'm3',
    display_value: 1100,
    display_unit: 'l',
  })
  t.equal(raw.body.data[1].display_value, 1350)
  const agg = await get(`meter_id=${water}&aggregate=daily`)
  t.equal(agg.status, 200, agg.text)
  t.match(agg.body.data[0], {
    min: 1.1,
    max: 1.35,
    display_unit: 'l',
    display_min: 1100,
    display_max: 1350,
  })
  const d = await get(`meter_id=${water}&derive=consumption`)
  t.equal(d.status, 200, d.text)
  t.match(d.body.data[0], { unit: 'm3', display_unit: 'l', display_consumption: 250 })
  t.ok(Math.abs(d.body.data[0].consumption - 0.25) < 1e-9)
})

t.test('a pulse meter without a unit takes a display_unit of its pulse family', async (t) => {
  const id = await create({ meter_identifier: 'pulse-l', pulse_weight: 1, pulse_unit: 'l' })
  const ok = await patch(id, { display_unit: 'l' })
  t.equal(ok.status, 200, ok.text)
  t.equal(ok.body.data.display_unit, 'l')
  const bad = await patch(id, { display_unit: 'kwh' })
  t.equal(bad.status, 422, bad.text)
  t.ok(bad.body.errors.display_unit)
  // A meter with neither unit nor pulse unit has no family to show in.
  const bare = await create({ meter_identifier: 'bare' })
  const none = await patch(bare, { display_unit: 'kwh' })
  t.equal(none.status, 422, none.text)
  t.ok(none.body.errors.display_unit)
})
