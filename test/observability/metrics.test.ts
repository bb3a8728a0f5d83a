// GET /metrics (Prometheus text) after real traffic, and the request log: one JSON line per
// request with workspace, status and duration, never a token, key or secret.
import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import { startApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { request, tmpDataDir } from '../helpers/server.js'
import { loadVectors } from '../decode/vectors.js'
import { awayFromMinuteEdge } from '../helpers/minute.js'

const lines: string[] = []
const sink = new Writable({
  write(chunk, _enc, cb) {
    lines.push(...chunk.toString().split('\n').filter(Boolean))
    cb()
  },
})
const app = await startApp(
  loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: tmpDataDir(),
    SCHEDULER: 'off',
    WORKERS: '1',
    LOG_LEVEL: 'info',
  }),
  { logger: pino({ level: 'info' }, sink) },
)
t.teardown(() => app.close())
const admin = app.parts.adminToken
const call = (m: string, p: string, token?: string, body?: unknown) =>
  request(app.url, m, p, { token, body })
const at = (min: number) => new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString()

const ws = (await call('POST', '/admin/v1/workspaces', admin, { name: 'm' })).body.data
const user = (
  await call('POST', `/admin/v1/workspaces/${ws.id}/users`, admin, {
    email: 'o@example.com',
    owner: true,
  })
).body.data
const tok = (
  await call('POST', `/admin/v1/workspaces/${ws.id}/tokens`, admin, {
    user_id: user.id,
    scopes: ['data:report', 'data:read'],
    rate_limit_per_minute: 8,
  })
).body.data
const sub = (
  await call('POST', `/admin/v1/workspaces/${ws.id}/event-subscriptions`, admin, {
    url: 'http://127.0.0.1:9/x',
    events: ['*'],
  })
).body.data
const endpoint = (
  await call('POST', `/admin/v1/workspaces/${ws.id}/webhook-endpoints`, admin, {
    mapping: {
      fields: { meter: 'm', kind: "'saldo'", value: 'v', unit: "'kwh'", recorded_at: 't' },
    },
  })
).body.data

function value(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue
    const m = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const ls = m[2] ?? ''
    if (Object.entries(labels).every(([k, v]) => ls.includes(`${k}="${v}"`))) return Number(m[3])
  }
  return null
}

t.test('metrics after traffic', async (t) => {
  const r = (readings: unknown[]) => call('POST', '/api/v1/reportData', tok.token, { readings })
  t.equal(
    (await r([{ meter: 'a', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(1) }])).status,
    201,
  )
  t.equal(
    (await r([{ meter: 'a', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(1) }])).status,
    200,
  )
  t.equal(
    (await r([{ meter: 'a', kind: 'saldo', value: 'x', unit: 'kwh', recorded_at: at(2) }, {}]))
      .status,
    422,
  )
  const v = loadVectors('visible.jsonl').find(
    (x) => x.key === null && x.expect !== 'wrong_key' && x.register,
  )!
  await r([{ profile: 'wmbus_oms', payload: { telegram: v.telegram }, recorded_at: at(3) }])
  // The limit is a fixed window on the minute: a slow run can cross a minute boundary
  // between the reports above and the pings. 17 pings (2 × 8 + 1) put at least 9 in one window.
  await awayFromMinuteEdge()
  let limited = 0
  for (let i = 0; i < 17 && limited === 0; i++)
    if ((await call('GET', '/api/v1/ping', tok.token)).status === 429) limited++
  t.ok(limited > 0, 'the token ran into its rate limit')
  await call('POST', '/admin/v1/scheduler/run', admin)

  const m = await call('GET', '/metrics', admin)
  t.equal(m.status, 200)
  t.match(m.headers['content-type'], /text\/plain/)
  const text = m.text
  t.ok(
    value(text, 'meterflow_readings_total', { source: 'report', status: 'created' })! >= 1,
    'created readings',
  )
  t.equal(
    value(text, 'meterflow_readings_total', { source: 'report', status: 'duplicate' }),
    1,
    'duplicates',
  )
  t.equal(
    value(text, 'meterflow_readings_total', { source: 'report', status: 'invalid' }),
    2,
    'items of a 422 batch',
  )
  t.equal(value(text, 'meterflow_ingest_batches_total', { source: 'report', code: '422' }), 1)
  t.ok(
    value(text, 'meterflow_ingest_batch_seconds_count', { source: 'report' })! >= 4,
    'batch latency histogram',
  )
  t.ok(
    value(text, 'meterflow_group_commit_seconds_count', { table: 'readings' })! >= 1,
    'group-commit latency histogram',
  )
  t.ok(value(text, 'meterflow_group_commit_rows_sum', { table: 'readings' })! >= 1)
  t.ok(value(text, 'meterflow_decode_total', { kind: 'telegram' })! >= 1, 'decode outcomes')
  t.ok(
    value(text, 'meterflow_rate_limit_hits_total', { limit: 'token' })! >= limited,
    'rate-limit hits',
  )
  t.equal(value(text, 'meterflow_actor_mailbox_depth'), 0, 'mailbox depth (idle)')
  t.ok(value(text, 'meterflow_actor_readings_held')! >= 2, 'readings held by the actors')
  t.ok(value(text, 'meterflow_actor_bound', { of: 'actors' })! >= 1_000, 'the actor bound')
  t.ok(value(text, 'meterflow_actor_bound', { of: 'readings' })! >= 100_000, 'the readings bound')
  t.equal(value(text, 'meterflow_actor_evictions'), 0, 'nothing evicted')
  t.not(value(text, 'meterflow_event_deliveries', { status: 'pending' }), null, 'outbox backlog')
  const lag = value(text, 'meterflow_scheduler_lag_seconds')!
  t.ok(lag >= 0 && lag < 60, `scheduler lag after a run (${lag}s)`)
  t.not(value(text, 'meterflow_stream_connections'), null)
  t.not(value(text, 'meterflow_process_resident_memory_bytes'), null, 'process metrics')
  t.notMatch(text, tok.token)
  t.notMatch(text, /workspace/, 'no per-tenant labels')
})

t.test('request log: one line per request with workspace, status, ms; no secrets', async (t) => {
  await call('POST', `/api/v1/webhooks/${endpoint.id}`, endpoint.token, { m: 'w1', v: 1, t: at(5) })
  await call('POST', `/api/v1/webhooks/${endpoint.id}`, undefined, { m: 'w1', v: 1, t: at(5) })
  await request(app.url, 'POST', `/api/v1/webhooks/${endpoint.id}`, {
    headers: { 'x-webhook-token': endpoint.token },
    body: { m: 'w2', v: 1, t: at(6) },
  })
  await call('GET', '/api/v1/ping', 'mf_wrong_token_value_123')
  await call('PUT', '/admin/v1/meters/1/wmbus-key', admin, {
    key: '00112233445566778899aabbccddeeff',
  })
  await call('POST', `/admin/v1/event-subscriptions/${sub.id}/rotate-secret`, admin)
  const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request')
  t.ok(requests.length >= 10)
  for (const l of requests) {
    t.type(l.status, 'number')
    t.type(l.ms, 'number')
    t.type(l.path, 'string')
  }
  const report = requests.find((l) => l.path === '/api/v1/reportData' && l.status === 201)
  t.equal(report.workspace, ws.id, 'workspace on an authenticated request')
  const hook = requests.find((l) => l.path.startsWith('/api/v1/webhooks/') && l.status < 300)
  t.equal(hook.workspace, ws.id, 'workspace on webhook ingest')
  const all = lines.join('\n')
  for (const secret of [
    tok.token,
    admin,
    endpoint.token,
    sub.signing_secret,
    '00112233445566778899aabbccddeeff',
    'mf_wrong_token_value_123',
  ])
    t.notOk(all.includes(secret), `no secret in the log (${secret.slice(0, 6)}…)`)
  t.notMatch(all, /authorization/i, 'no headers in the log')
})
