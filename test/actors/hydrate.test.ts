// A meter's first turn after a restart loads its window from the store. Where that window is
// the meter's whole history of a kind, the window alone decides the turn (flags, duplicates):
// no neighbourhood or `existing` look-up follows. A longer history still asks the store
// about readings older than its window.
import t from 'tap'
import { startTestServer, tmpDataDir, type TestServer } from '../helpers/server.js'

const dir = tmpDataDir()
const MIN = 60_000
const t0 = Date.now() - 2 * 86_400_000
const item = (meter: string, k: number, value = 10 + k * 0.25) => ({
  meter,
  kind: 'saldo',
  value,
  unit: 'kwh',
  recorded_at: new Date(t0 + k * MIN).toISOString(),
})
const SHORT = 30 // well under the 97 valid readings a late reading's flags may need
const LONG = 300 // beyond the 256 rows the window's query reads

let s: TestServer = await startTestServer({}, { dataDir: dir })
const tenant = await s.tenant({ workspace: { provision_cap_per_hour: 1_000_000 } })
const report = (items: unknown[]) =>
  s.call('POST', '/api/v1/reportData', { token: tenant.token, body: { readings: items } })
const statuses = (r: { body: { results: { status: string }[] } }) =>
  r.body.results.map((x) => x.status)

t.teardown(() => s.close())

t.test('before the restart: a short and a long history', async (t) => {
  const short = Array.from({ length: SHORT }, (_, k) => item('short', k))
  const long = Array.from({ length: LONG }, (_, k) => item('long', k))
  t.equal((await report([...short, ...long])).status, 201)
})

t.test('after it, the whole-history window decides alone', async (t) => {
  await s.close()
  s = await startTestServer({}, { dataDir: dir })
  const q = () => ({ ...(s.app.parts.actors.env.history as any).queries })
  const before = q()
  const appended = await report([item('short', SHORT), item('long', LONG)])
  t.same(statuses(appended), ['created', 'created'])
  // A reading older than the short meter's whole history, and a replay of its first one.
  const old = await report([item('short', -5), item('short', 0)])
  t.same(statuses(old), ['created', 'duplicate'])
  const after = q()
  t.equal(after.neighbourhood - before.neighbourhood, 0, 'no neighbourhood look-up')
  t.equal(after.existing - before.existing, 0, 'no existing look-up')

  // The long meter's window is its newest 256 rows: a replay of its first reading is the
  // store's to recognise.
  const replay = await report([item('long', 0)])
  t.same(statuses(replay), ['duplicate'])
  t.ok(q().existing > after.existing, 'the store was asked')

  // The short meter's readings around its old start, flagged as one sorted batch would
  // be: a register rising 0.25 a minute, nothing to flag.
  const from = new Date(t0 - 10 * MIN).toISOString()
  const to = new Date(t0 + MIN).toISOString()
  const raw = await s.call(
    'GET',
    `/api/v1/readings?meter_id=${await meterId('short')}&from=${from}&to=${to}`,
    { token: tenant.token },
  )
  t.equal(raw.status, 200, raw.text)
  t.same(
    raw.body.data.map((r: any) => [r.value, r.quality_flags]),
    [
      [8.75, null],
      [10, null],
      [10.25, null],
    ],
  )
})

async function meterId(identifier: string): Promise<number> {
  const r = await s.call('GET', '/api/v1/meters?per_page=100', { token: tenant.token })
  return r.body.data.find((m: any) => m.meter_identifier === identifier).id
}
