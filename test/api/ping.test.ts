// GET /api/v1/ping and the scheduler heartbeat, driven by a ManualClock: `degraded` with
// ever_ran:false when SCHEDULER=off and nothing ever ran, `ok` after a run, stale after three
// missed intervals; then the same data dir restarted with SCHEDULER=on records its own runs.
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const INTERVAL_S = 60
const clock = new ManualClock(Date.UTC(2026, 10, 1, 12, 0, 0))
let s: TestServer = await startTestServer(
  { SCHEDULER: 'off', SCHEDULER_INTERVAL_S: String(INTERVAL_S) },
  { clock },
)
t.teardown(() => s.close())
const { token } = await s.tenant()
const ping = async () => {
  const r = await s.call('GET', '/api/v1/ping', { token })
  if (r.status !== 200) throw new Error(`ping ${r.status} ${r.text}`)
  return r.body
}

t.test('SCHEDULER=off and never ran: degraded, HTTP 200, ever_ran false', async (t) => {
  const b = await ping()
  t.same(Object.keys(b).sort(), ['application', 'scheduler', 'status', 'time'])
  t.equal(b.status, 'degraded')
  t.equal(b.application, 'meterflow')
  t.equal(b.time, new Date(clock.now()).toISOString(), 'time is the service clock, ISO 8601')
  t.same(Object.keys(b.scheduler).sort(), ['ever_ran', 'last_run_at', 'stale'])
  t.equal(b.scheduler.ever_ran, false)
  t.equal(b.scheduler.last_run_at, null)
  t.equal(typeof b.scheduler.stale, 'boolean')
  clock.advance(10 * 60_000)
  t.equal((await ping()).scheduler.ever_ran, false, 'no line runs by itself with SCHEDULER=off')
})

t.test('POST /admin/v1/scheduler/run records a run: ok', async (t) => {
  const run = await s.call('POST', '/admin/v1/scheduler/run', { token: s.adminToken })
  t.equal(run.status, 200)
  t.equal(run.body.data.ran_at, new Date(clock.now()).toISOString())
  for (const k of ['pruned', 'alerts_opened', 'alerts_resolved', 'transfers'])
    t.equal(typeof run.body.data[k], 'number', `summary has ${k}`)
  t.equal((await s.call('POST', '/admin/v1/scheduler/run')).status, 401, 'needs the admin token')
  const b = await ping()
  t.equal(b.status, 'ok')
  t.same(b.scheduler, { last_run_at: run.body.data.ran_at, ever_ran: true, stale: false })
})

t.test('stale after three missed intervals: degraded with ever_ran true', async (t) => {
  clock.advance(3 * INTERVAL_S * 1000)
  t.equal((await ping()).status, 'ok', 'exactly three intervals late is still fresh')
  clock.advance(1000)
  const b = await ping()
  t.equal(b.status, 'degraded')
  t.equal(b.scheduler.ever_ran, true)
  t.equal(b.scheduler.stale, true)
  await s.call('POST', '/admin/v1/scheduler/run', { token: s.adminToken })
  t.equal((await ping()).status, 'ok', 'a new run makes it fresh again')
})

t.test('SCHEDULER=on: the line records a run at start and keeps the heartbeat fresh', async (t) => {
  const dataDir = s.dataDir
  await s.close()
  clock.advance(24 * 3600_000)
  s = await startTestServer({ SCHEDULER: 'on', SCHEDULER_INTERVAL_S: '1' }, { clock, dataDir })
  let b = await ping()
  for (let i = 0; i < 50 && b.status !== 'ok'; i++) {
    await new Promise((r) => setTimeout(r, 100))
    b = await ping()
  }
  t.equal(b.status, 'ok', 'fresh without any admin call')
  t.equal(b.scheduler.last_run_at, new Date(clock.now()).toISOString())
  // The croner line runs every second in real time; move the clock and wait for it.
  clock.advance(10_000)
  const before = b.scheduler.last_run_at
  for (let i = 0; i < 40 && b.scheduler.last_run_at === before; i++) {
    await new Promise((r) => setTimeout(r, 100))
    b = await ping()
  }
  t.not(b.scheduler.last_run_at, before, 'each interval records a new run')
  t.equal(b.status, 'ok')
})
