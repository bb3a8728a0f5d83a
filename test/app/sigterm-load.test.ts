// SIGTERM under load (issue 13), on the real process: overlapping requests on the same
// meters keep coming when the signal arrives. Every request is answered (201, or 503 when
// it could not finish before the drain deadline) — none is left hanging or reset — the
// process exits before a supervisor's SIGKILL at 10 s, and every reading that was
// acknowledged is in the store afterwards. Embedded chDB only (one process owns DATA_DIR).
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { startProc } from '../helpers/proc.js'
import { request, startTestServer, tmpDataDir } from '../helpers/server.js'

const dataDir = tmpDataDir()
t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))

t.test('SIGTERM under load: bounded exit, every request answered, acknowledged kept', async (t) => {
  const { child, url, exit, stderr } = await startProc({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: '',
    WORKERS: undefined,
  })
  const admin = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()
  const call = async (method: string, p: string, body: unknown, token = admin) => {
    const r = await request(url, method, p, { token, body })
    if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${r.text}`)
    return r.body
  }
  const ws = (await call('POST', '/admin/v1/workspaces', { name: 'sigterm-load' })).data.id
  const user = await call('POST', `/admin/v1/workspaces/${ws}/users`, {
    email: 'load@example.com',
    owner: true,
  })
  const token = (
    await call('POST', `/admin/v1/workspaces/${ws}/tokens`, {
      user_id: user.data.id,
      scopes: ['data:report'],
      rate_limit_per_minute: 1_000_000,
    })
  ).data.token

  const meters = 200
  const base = Date.now() - 20 * 86_400_000
  let step = 0
  const acknowledged = new Set<string>()
  const outcomes: Record<string, number> = {}
  let stop = false
  const loop = async () => {
    while (!stop) {
      const s = step++
      const readings = Array.from({ length: meters }, (_, i) => {
        // Every 10th reading is hours late: the store paths run too.
        const late = (s + i) % 10 === 0
        const at = base + s * 60_000 - (late ? 3 * 3_600_000 - 30_000 : 0)
        return {
          meter: `L${i}`,
          kind: 'saldo',
          value: (at - base) / 240_000,
          unit: 'kwh',
          recorded_at: new Date(at).toISOString(),
        }
      })
      try {
        const r = await request(url, 'POST', '/api/v1/reportData', { token, body: { readings } })
        outcomes[r.status] = (outcomes[r.status] ?? 0) + 1
        if (r.status === 201 || r.status === 200)
          for (const it of r.body.results)
            if (it.status === 'created' || it.status === 'duplicate')
              acknowledged.add(`${it.meter}|${Date.parse(it.recorded_at)}`)
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? String(err)
        outcomes[code] = (outcomes[code] ?? 0) + 1
        if (code === 'ECONNREFUSED') return // the listener is closed: this one was never sent
      }
    }
  }
  const clients = 8
  const loops = Array.from({ length: clients }, loop)
  // Load until some requests are acknowledged, then a little longer, then the signal.
  while (acknowledged.size === 0) await new Promise((r) => setTimeout(r, 50))
  await new Promise((r) => setTimeout(r, 1500))
  let killed = false
  const supervisor = setTimeout(() => {
    killed = true
    child.kill('SIGKILL')
  }, 10_000)
  child.kill('SIGTERM')
  const code = await exit
  clearTimeout(supervisor)
  stop = true
  await Promise.all(loops)

  t.equal(killed, false, `exited before the supervisor's SIGKILL at 10 s (stderr: ${stderr()})`)
  t.equal(code, 0, 'exit code 0')
  const answered = Object.keys(outcomes).filter((k) => /^\d+$/.test(k))
  t.same(
    answered.filter((k) => k !== '201' && k !== '503'),
    [],
    `requests are answered 201 or 503 (${JSON.stringify(outcomes)})`,
  )
  // A request still in the kernel's accept queue when the listener closes is reset by the
  // kernel, unread: never acknowledged, safe to resend. Every request the service read was
  // answered (201 or 503 above); one the drain could not finish is answered 503 (next test).
  // Each client has one connection in flight, and any of them may be waiting in the queue
  // while the event loop is busy with a batch (3 of 8 on a loaded CI machine; 0–2 mostly).
  t.ok(
    (outcomes.ECONNRESET ?? 0) <= clients,
    'at most one connection per client reset from the accept queue',
  )
  t.ok(acknowledged.size > 0, `${acknowledged.size} readings acknowledged before the stop`)

  // Every acknowledged reading is stored: open the same DATA_DIR again.
  const again = await startTestServer({ CLICKHOUSE_URL: '', REDIS_URL: '' }, { dataDir })
  t.teardown(() => again.close())
  const rows = await again.app.parts.store.sql.query<{ id: string; at: string }>(
    `SELECT DISTINCT m.meter_identifier AS id, r.recorded_at AS at FROM readings r
     JOIN (SELECT id, meter_identifier FROM meters FINAL WHERE workspace_id = {ws:UInt64}) m ON m.id = r.meter_id
     WHERE r.workspace_id = {ws:UInt64}`,
    { ws },
  )
  const stored = new Set(rows.map((r) => `${r.id}|${Date.parse(r.at.replace(' ', 'T') + 'Z')}`))
  const missing = [...acknowledged].filter((k) => !stored.has(k))
  t.same(
    missing.slice(0, 5),
    [],
    `every acknowledged reading is stored (${missing.length} missing)`,
  )
})

t.test(
  'a request still running at the drain deadline is answered 503, not left hanging',
  async (t) => {
    const s = await startTestServer()
    t.teardown(() => s.close())
    const { token } = await s.tenant()
    const base = Date.now() - 5 * 86_400_000
    const readings = Array.from({ length: 5000 }, (_, i) => ({
      meter: `d${i % 1000}`,
      kind: 'saldo',
      value: i,
      unit: 'kwh',
      recorded_at: new Date(base + i * 60_000).toISOString(),
    }))
    const pending = s.call('POST', '/api/v1/reportData', { token, body: { readings } })
    while (s.app.http.inFlight() === 0) await new Promise((r) => setImmediate(r))
    await s.app.http.drain(1)
    const r = await pending
    t.equal(r.status, 503, 'answered 503 at the deadline')
    t.match(r.body.message, /Shutting down/, 'saying why')
    t.equal(r.headers['retry-after'], '5', 'with Retry-After')
  },
)
