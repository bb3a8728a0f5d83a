// Storage slow or failing, and a decoder worker crash: requests fail cleanly (5xx JSON),
// nothing of a failed batch is written, a retry after recovery stores it, slow inserts are
// merged instead of queued one per request, and the decoder pool replaces a dead worker.
import t from 'tap'
import { startTestServer } from '../helpers/server.js'
import { loadVectors } from '../decode/vectors.js'
import type { DecoderPool } from '../../src/decode/index.js'

const s = await startTestServer()
t.teardown(() => s.close())
const sql = s.app.parts.store.sql
const at = (min: number) => new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString()
const count = async (table: string, ws: number) =>
  Number(
    (
      await sql.query<{ n: string }>(
        `SELECT count() AS n FROM ${table} FINAL WHERE workspace_id = {ws:UInt64}`,
        { ws },
      )
    )[0]!.n,
  )

t.test(
  'readings table failing: 5xx JSON, nothing half-written, retry stores after repair',
  async (t) => {
    const ten = await s.tenant()
    await s.admin('POST', `/workspaces/${ten.workspaceId}/profiles`, {
      key: 'wm',
      name: 'Water',
      kind: 'saldo',
      unit: 'm3',
    })
    const batch = [
      { meter: 'f1', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(1) },
      { meter: 'f2', profile: 'wm', payload: { value: 5, status: ['leak'] }, recorded_at: at(1) },
    ]
    const report = () =>
      s.call('POST', '/api/v1/reportData', { token: ten.token, body: { readings: batch } })
    await sql.exec('RENAME TABLE readings TO readings_broken')
    let failed
    try {
      failed = await report()
    } finally {
      await sql.exec('RENAME TABLE readings_broken TO readings')
    }
    t.ok(failed.status >= 500 && failed.status < 600, `answered ${failed.status}`)
    t.type(failed.body?.message, 'string', 'JSON {message}')
    t.equal(await count('readings', ten.workspaceId), 0, 'no reading stored')
    // Status reports are written first and taken back when the readings insert fails.
    t.equal(
      await count('status_reports', ten.workspaceId),
      0,
      'no status report of the failed batch stored',
    )

    const retry = await report()
    t.equal(retry.status, 201, 'the retry after repair is stored')
    t.same(
      retry.body.results.map((r: any) => r.status),
      ['created', 'created'],
      'created, not mistaken for duplicates of the failed attempt',
    )
    t.equal(await count('readings', ten.workspaceId), 2)
  },
)

t.test('slow storage: concurrent requests share inserts and are all answered', async (t) => {
  const ten = await s.tenant()
  // The meters exist first, so only reading inserts are slowed and counted.
  const n = 40
  const first = await s.call('POST', '/api/v1/reportData', {
    token: ten.token,
    body: {
      readings: Array.from({ length: n }, (_, i) => ({
        meter: `slow${i}`,
        kind: 'saldo',
        value: 0,
        unit: 'kwh',
        recorded_at: at(1),
      })),
    },
  })
  t.equal(first.status, 201)
  const real = sql.insert.bind(sql)
  let inserts = 0
  let concurrent = 0
  let peak = 0
  sql.insert = async (table, rows, opts) => {
    if (table !== 'readings') return real(table, rows, opts)
    inserts++
    concurrent++
    peak = Math.max(peak, concurrent)
    await new Promise((r) => setTimeout(r, 300))
    try {
      return await real(table, rows, opts)
    } finally {
      concurrent--
    }
  }
  t.teardown(() => {
    sql.insert = real
  })
  const rss = process.memoryUsage().rss
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      s.call('POST', '/api/v1/reportData', {
        token: ten.token,
        body: {
          readings: [
            { meter: `slow${i}`, kind: 'saldo', value: i, unit: 'kwh', recorded_at: at(2) },
          ],
        },
      }),
    ),
  )
  t.same(new Set(answers.map((a) => a.status)), new Set([201]), 'every request answered 201')
  t.ok(inserts < n, `${n} requests became ${inserts} inserts (group commit)`)
  t.equal(peak, 1, 'one reading insert at a time; the rest accumulate into the next')
  t.ok(process.memoryUsage().rss - rss < 200 * 1024 * 1024, 'memory did not balloon')
  t.equal(await count('readings', ten.workspaceId), 2 * n)
})

t.test('decoder worker crash: the batch fails cleanly, the pool recovers', async (t) => {
  const ten = await s.tenant({ workspace: { provision_cap_per_hour: 1000 } })
  const pool = s.app.parts.decoder as DecoderPool
  const v = loadVectors('visible.jsonl').find(
    (x) => x.key === null && x.expect !== 'wrong_key' && x.register,
  )!
  const batch = [{ profile: 'wmbus_oms', payload: { telegram: v.telegram }, recorded_at: at(1) }]
  const report = () =>
    s.call('POST', '/api/v1/reportData', { token: ten.token, body: { readings: batch } })

  // The next decode runs on a worker that exits mid-task (a real thread death in Piscina).
  const real = pool.decodeTelegrams
  pool.decodeTelegrams = async () => {
    pool.decodeTelegrams = real
    return (await pool.crashOneWorkerForTest()) as never
  }
  const crashed = await report()
  t.ok(crashed.status >= 500 && crashed.status < 600, `answered ${crashed.status}`)
  t.type(crashed.body?.message, 'string')
  t.equal(await count('readings', ten.workspaceId), 0, 'nothing stored')

  const again = await report()
  t.equal(again.status, 201, 'the same batch decodes on a replacement worker')
  t.ok(pool.threads >= 1)
})
