// derive=consumption over consecutive windows (issue 14, item 7): the interval that crosses
// `from` belongs to the window holding its end, so two windows add up to the window covering
// both (docs/derive.md, "Window").
import t from 'tap'
import { insertReadings } from './helpers.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const { token, workspaceId: ws } = await s.tenant()
const meter = await s.call('POST', '/api/v1/meters', {
  token,
  body: { meter_identifier: 'win-1', expected_interval_minutes: 60 },
})
const id = meter.body.data.id
const T0 = Date.UTC(2026, 0, 1)
const H = 3600_000
const iso = (h: number) => new Date(T0 + h * H).toISOString()
// Saldo readings at 0, 5, 10, 12 (a gap 5→10) and 20 hours: kWh 100, 105, 115, 116, 130.
await insertReadings(
  s,
  ws,
  [
    [0, 100],
    [5, 105],
    [10, 115],
    [12, 116],
    [20, 130],
  ].map(([h, v]) => ({ meter: id, kind: 'saldo', at: T0 + h! * H, value: v! })),
)

async function derive(from: number, to: number, extra = '') {
  const r = await s.call(
    'GET',
    `/api/v1/readings?meter_id=${id}&derive=consumption&from=${iso(from)}&to=${iso(to)}${extra}`,
    { token },
  )
  if (r.status !== 200) throw new Error(r.text)
  return r.body.data as { period_start: string; period_end: string; consumption: number }[]
}
const total = (rows: { consumption: number }[]) => rows.reduce((a, r) => a + r.consumption, 0)

t.test('two windows add up to the window covering both', async (t) => {
  const whole = await derive(0, 20)
  t.equal(total(whole), 30)
  for (const cut of [3, 5, 7, 11]) {
    const a = await derive(0, cut)
    const b = await derive(cut, 20)
    t.equal(total(a) + total(b), 30, `cut at hour ${cut}`)
    t.same(
      [...a, ...b].map((r) => r.period_end),
      whole.map((r) => r.period_end),
      `cut at ${cut}: every interval exactly once`,
    )
  }
})

t.test('the interval crossing from is included whole, starting before from', async (t) => {
  const rows = await derive(7, 11)
  t.same(
    rows.map((r) => [r.period_start, r.period_end, r.consumption]),
    [[iso(5), iso(10), 10]],
  )
})

t.test('a reading exactly at from starts the window', async (t) => {
  const rows = await derive(5, 12)
  t.same(
    rows.map((r) => r.period_start),
    [iso(5), iso(10)],
  )
})

t.test('with interpolate=linear the slots of the crossing interval come along', async (t) => {
  const whole = await derive(0, 20, '&interpolate=linear')
  const a = await derive(0, 7, '&interpolate=linear')
  const b = await derive(7, 20, '&interpolate=linear')
  t.equal(a.length + b.length, whole.length)
  t.ok(Math.abs(total(a) + total(b) - total(whole)) < 1e-9)
})
