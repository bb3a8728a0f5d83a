// kill -9 during load, under each ingest profile of issue 13: the service runs as a child
// process, four clients send batches back to back, the process is SIGKILLed mid-stream, and
// after a restart on the same DATA_DIR every reading that was acknowledged (201) is there.
// Profiles: each client on its own meter (in order); all clients on the same meters (time
// moving forward across clients, every 10th reading 3 h late); and first contact, where all
// four clients name the same new meters in every batch (each must exist once afterwards); and
// device status, where every reading carries a status report (each acknowledged one must be
// in status_reports after the restart: embedded, they reach it after their readings); and
// wM-Bus gateways, one plain telegram per meter per request, decoded in the worker pool.
import fs from 'node:fs'
import t from 'tap'
import { ChdbSql } from '../../src/store/chdb.js'
import { request, tmpDataDir } from '../helpers/server.js'
import { startProc } from '../helpers/proc.js'
import { fullFrame } from '../helpers/wmbus.js'

const ADMIN = 'kill9-admin-token-0123456789'
const T0 = Date.UTC(2025, 0, 1)
const MIN = 60_000

interface Reading {
  /** Absent for telegrams: their link layer names the meter. */
  meter?: string
  kind?: 'saldo'
  value?: number
  unit?: 'kwh'
  profile?: string
  payload?: { value: number; status: string[] } | { telegram: string }
  recorded_at: string
}
const reading = (meter: string, at: number, value: number): Reading => ({
  meter,
  kind: 'saldo',
  value,
  unit: 'kwh',
  recorded_at: new Date(at).toISOString(),
})

/** The meter an item reports for: named, or a telegram's link-layer identifier (BCD, LE). */
const meterOf = (it: Reading) =>
  it.meter ??
  (it.payload as { telegram: string }).telegram.slice(8, 16).match(/../g)!.reverse().join('')

/** Batch `b` of client `c`, per profile. */
const PROFILES: Record<string, (c: number, b: number) => Reading[]> = {
  'own meter, in order': (c, b) =>
    Array.from({ length: 50 }, (_, i) => reading(`k${c}`, T0 + (b * 50 + i) * MIN, b * 50 + i)),
  'shared meters, overlapping and late': (c, b) =>
    Array.from({ length: 20 }, (_, i) => {
      const step = b * 4 + c
      const late = (step * 20 + i) % 10 === 0
      const at = T0 + step * MIN - (late ? 3 * 3_600_000 + 30_000 : 0)
      return reading(`s${i}`, at, (at - T0) / MIN)
    }),
  'first contact, same new meters in every client': (_c, b) =>
    Array.from({ length: 25 }, (_, i) => reading(`n${b}-${i}`, T0 + b * MIN, i)),
  'device status on every reading': (c, b) =>
    Array.from({ length: 50 }, (_, i) => ({
      meter: `d${c}-${i % 5}`,
      profile: 'statused',
      payload: { value: b * 50 + i, status: (b + i) % 3 ? [] : ['LK'] },
      recorded_at: new Date(T0 + (b * 50 + i) * MIN).toISOString(),
    })),
  'telegrams, one per meter per request': (c, b) =>
    Array.from({ length: 25 }, (_, i) => ({
      profile: 'wmbus_oms',
      payload: { telegram: fullFrame(10_000_000 + c * 100 + i, b * 10 + i) },
      recorded_at: new Date(T0 + b * MIN).toISOString(),
    })),
}

for (const [name, batch] of Object.entries(PROFILES))
  t.test(`every acknowledged reading survives SIGKILL: ${name}`, async (t) => {
    const dataDir = tmpDataDir()
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))
    const p = await startProc({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN })
    const admin = (m: string, path: string, body?: unknown) =>
      request(p.url, m, `/admin/v1${path}`, { token: ADMIN, body })
    const ws = (await admin('POST', '/workspaces', { name: 'k9', provision_cap_per_hour: 100_000 }))
      .body.data
    const user = (await admin('POST', `/workspaces/${ws.id}/users`, { email: 'k@example.com' }))
      .body.data
    const token = (
      await admin('POST', `/workspaces/${ws.id}/tokens`, {
        user_id: user.id,
        scopes: ['data:report'],
        rate_limit_per_minute: 1_000_000,
      })
    ).body.data.token
    await admin('POST', `/workspaces/${ws.id}/profiles`, {
      key: 'statused',
      name: 'Meter with device status',
      kind: 'saldo',
      unit: 'm3',
      status_map: { LK: 'leak' },
    })

    const acked = new Set<string>()
    const reported = new Set<string>()
    const named = new Set<string>()
    let stop = false
    let sent = 0
    const client = async (c: number) => {
      for (let b = 0; !stop; b++) {
        const readings = batch(c, b)
        sent++
        const r = await request(p.url, 'POST', '/api/v1/reportData', {
          token,
          body: { readings },
        }).catch(() => null)
        if (r?.status !== 200 && r?.status !== 201) continue
        // A duplicate is acknowledged too: it says the reading is stored.
        r.body.results.forEach((x: { status: string }, i: number) => {
          const it = readings[i]!
          const m = meterOf(it)
          named.add(m)
          if (x.status === 'created' || x.status === 'duplicate') {
            acked.add(`${m}|${it.recorded_at}`)
            if (it.payload && 'status' in it.payload) reported.add(`${m}|${it.recorded_at}`)
          }
        })
      }
    }
    const clients = [0, 1, 2, 3].map(client)
    await new Promise((r) => setTimeout(r, 2500))
    await p.kill('SIGKILL')
    stop = true
    await Promise.all(clients)
    t.ok(acked.size > 0, `${acked.size} readings acknowledged in ${sent} batches before the kill`)

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
    const meters = await sql.query<{ m: string; n: string }>(
      `SELECT meter_identifier AS m, count() AS n FROM meters FINAL
        WHERE workspace_id = {ws:UInt64} AND deleted = 0 GROUP BY m HAVING n > 1`,
      { ws: ws.id },
    )
    const reports = await sql.query<{ m: string; t: string }>(
      `SELECT meter_identifier AS m, formatDateTime(reported_at, '%Y-%m-%dT%H:%i:%S.000Z', 'UTC') AS t
         FROM status_reports FINAL JOIN (SELECT id, meter_identifier FROM meters FINAL) AS mm ON mm.id = status_reports.meter_id
        WHERE workspace_id = {ws:UInt64}`,
      { ws: ws.id },
    )
    await sql.close()
    const storedReports = new Set(reports.map((r) => `${r.m}|${r.t}`))
    const unreported = [...reported].filter((k) => !storedReports.has(k))
    t.same(unreported, [], `no status report of the ${reported.size} acknowledged is missing`)
    const stored = new Set(rows.map((r) => `${r.m}|${r.t}`))
    const missing = [...acked].filter((k) => !stored.has(k))
    t.same(missing, [], 'no acknowledged reading is missing')
    t.same(meters, [], `each of the ${named.size} meters named exists once`)
  })
