// kill -9 during load: the service runs as a child process, four clients send batches
// back to back, the process is SIGKILLed mid-stream, and after a restart on the same
// DATA_DIR every reading that was acknowledged (201) is there.
import fs from 'node:fs'
import t from 'tap'
import { ChdbSql } from '../../src/store/chdb.js'
import { request, tmpDataDir } from '../helpers/server.js'
import { startProc } from '../helpers/proc.js'

const dataDir = tmpDataDir()
const ADMIN = 'kill9-admin-token-0123456789'
t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))

t.test('every acknowledged reading survives SIGKILL', async (t) => {
  const p = await startProc({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN })
  const admin = (m: string, path: string, body?: unknown) =>
    request(p.url, m, `/admin/v1${path}`, { token: ADMIN, body })
  const ws = (await admin('POST', '/workspaces', { name: 'k9' })).body.data
  const user = (await admin('POST', `/workspaces/${ws.id}/users`, { email: 'k@example.com' })).body
    .data
  const token = (
    await admin('POST', `/workspaces/${ws.id}/tokens`, {
      user_id: user.id,
      scopes: ['data:report'],
      rate_limit_per_minute: 1_000_000,
    })
  ).body.data.token

  // Each client owns one meter and sends strictly later readings, one batch at a time.
  const acked = new Set<string>()
  let stop = false
  let sent = 0
  const client = async (c: number) => {
    for (let b = 0; !stop; b++) {
      const readings = Array.from({ length: 50 }, (_, i) => ({
        meter: `k${c}`,
        kind: 'saldo',
        value: b * 50 + i,
        unit: 'kwh',
        recorded_at: new Date(Date.UTC(2025, 0, 1) + (b * 50 + i) * 60_000).toISOString(),
      }))
      sent++
      const r = await request(p.url, 'POST', '/api/v1/reportData', {
        token,
        body: { readings },
      }).catch(() => null)
      if (r?.status === 201) for (const x of readings) acked.add(`k${c}|${x.recorded_at}`)
    }
  }
  const clients = [0, 1, 2, 3].map(client)
  await new Promise((r) => setTimeout(r, 2500))
  await p.kill('SIGKILL')
  stop = true
  await Promise.all(clients)
  t.ok(
    acked.size > 0,
    `${acked.size} readings acknowledged out of ${sent} batches sent before the kill`,
  )

  const again = await startProc({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN })
  t.equal(
    (await request(again.url, 'GET', '/healthz')).status,
    200,
    'restarts on the same DATA_DIR',
  )
  await again.kill('SIGTERM')

  const sql = new ChdbSql(dataDir)
  const rows = await sql.query<{ m: string; t: string }>(
    `SELECT meter_identifier AS m, formatDateTime(recorded_at, '%Y-%m-%dT%H:%i:%S.000Z', 'UTC') AS t
       FROM readings FINAL JOIN (SELECT id, meter_identifier FROM meters FINAL) AS mm ON mm.id = readings.meter_id
      WHERE workspace_id = {ws:UInt64}`,
    { ws: ws.id },
  )
  await sql.close()
  const stored = new Set(rows.map((r) => `${r.m}|${r.t}`))
  const missing = [...acked].filter((k) => !stored.has(k))
  t.same(missing, [], 'no acknowledged reading is missing')
})
