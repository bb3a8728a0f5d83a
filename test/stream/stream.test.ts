// WebSocket streaming ingest (/api/v1/stream): the same answers as /reportData per message,
// token auth on the upgrade and per message, rate limit per message, flow control that
// refuses instead of buffering when the store is slow, and the message size limit.
import t from 'tap'
import type { Ingest } from '../../src/ingest/types.js'
import type { StreamEndpoint } from '../../src/stream/build.js'
import { awayFromMinuteEdge } from '../helpers/minute.js'
import { startTestServer, swappableIngest } from '../helpers/server.js'
import { connectWs, frame } from './ws-client.js'

const swap = swappableIngest()
const s = await startTestServer({}, { wrapIngest: swap.wrap })
t.teardown(() => s.close())
const wsUrl = s.url.replace('http', 'ws') + '/api/v1/stream'
const stream = s.app.parts.stream as StreamEndpoint
const at = (min: number) => new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString()
const reading = (meter: string, min: number, value = min) => ({
  meter,
  kind: 'saldo',
  value,
  unit: 'kwh',
  recorded_at: at(min),
})

async function token(ws: number, user: number, scopes: string[], rate = 100_000) {
  const r = await s.admin('POST', `/workspaces/${ws}/tokens`, {
    user_id: user,
    scopes,
    rate_limit_per_minute: rate,
  })
  return r.data as { id: number; token: string }
}

t.test('upgrade: 401 without or with an unknown token, 403 without data:report', async (t) => {
  const none = await connectWs(wsUrl)
  t.equal(none.status, 401)
  t.same(JSON.parse(none.body), { message: 'Unauthenticated.' })
  const bad = await connectWs(wsUrl, { authorization: 'Bearer nope' })
  t.equal(bad.status, 401)
  const ten = await s.tenant()
  const read = await token(ten.workspaceId, ten.userId, ['data:read'])
  const r = await connectWs(wsUrl, { authorization: `Bearer ${read.token}` })
  t.equal(r.status, 403)
  t.match(JSON.parse(r.body).message, /data:report/)
  const q = await connectWs(`${wsUrl}?token=${ten.token}`)
  t.equal(q.status, 401, 'no query-string token form')
})

t.test('each message is answered with its id and the /reportData status and body', async (t) => {
  const ten = await s.tenant()
  const c = await connectWs(wsUrl, { authorization: `Bearer ${ten.token}` })
  t.equal(c.status, 101)
  c.send({ id: 'b1', readings: [reading('m1', 1), reading('m1', 2)] })
  const a1 = await c.next()
  t.equal(a1.id, 'b1')
  t.equal(a1.status, 201)
  t.equal(a1.body.accepted, 2)
  t.same(
    a1.body.results.map((r: any) => r.status),
    ['created', 'created'],
  )
  c.send({ id: 7, readings: [reading('m1', 1)] })
  const a2 = await c.next()
  t.same([a2.id, a2.status, a2.body.duplicates], [7, 200, 1], 'a replay is a duplicate, 200')

  // The same bad batch over HTTP and over the stream gives the same error object.
  const bad = [reading('m1', 3), { ...reading('m1', 4), value: 'x' }]
  const http = await s.call('POST', '/api/v1/reportData', {
    token: ten.token,
    body: { readings: bad },
  })
  c.send({ id: 'bad', readings: bad })
  const a3 = await c.next()
  t.equal(a3.status, 422)
  t.equal(http.status, 422)
  t.same(a3.body, http.body, 'identical 422 body')
  t.ok(a3.body.errors['readings.1.value'])

  c.send('{not json')
  const a4 = await c.next()
  t.same([a4.id, a4.status], [null, 422])
  t.ok(a4.body.errors.body)
  c.send({ readings: [] })
  const a5 = await c.next()
  t.equal(a5.status, 422)
  t.ok(a5.body.errors.id, 'a message without id is a 422 naming id')

  const stored = await s.app.parts.store.sql.query<{ n: string }>(
    'SELECT count() AS n FROM readings FINAL WHERE workspace_id = {ws:UInt64}',
    { ws: ten.workspaceId },
  )
  t.equal(Number(stored[0]!.n), 2, 'only the two created readings are stored')
  c.close()
  await c.closed
})

t.test('every message counts against the token rate limit; 429 answers', async (t) => {
  const ten = await s.tenant()
  const tok = await token(ten.workspaceId, ten.userId, ['data:report'], 3)
  // The upgrade and the three messages must fall in one minute's window.
  await awayFromMinuteEdge()
  const c = await connectWs(wsUrl, { authorization: `Bearer ${tok.token}` })
  t.equal(c.status, 101, 'the upgrade took one of three')
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    c.send({ id: i, readings: [reading('rl', i)] })
    statuses.push((await c.next()).status)
  }
  t.same(statuses, [201, 201, 429])
  c.close()
})

t.test('a token revoked mid-connection: 401 answer, then the connection closes', async (t) => {
  const ten = await s.tenant()
  const tok = await token(ten.workspaceId, ten.userId, ['data:report'])
  const c = await connectWs(wsUrl, { authorization: `Bearer ${tok.token}` })
  await s.admin('DELETE', `/tokens/${tok.id}`)
  c.send({ id: 'x', readings: [reading('rv', 1)] })
  const a = await c.next()
  t.same([a.id, a.status], ['x', 401])
  t.equal(await c.closed, 1008)
})

t.test(
  'slow store: at most maxInFlight messages are processed, the rest refused at once',
  async (t) => {
    const ten = await s.tenant()
    const real: Ingest = swap.real
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let running = 0
    let peak = 0
    swap.use({
      async ingest(req) {
        running++
        peak = Math.max(peak, running)
        await gate
        try {
          return await real.ingest(req)
        } finally {
          running--
        }
      },
    })
    t.teardown(() => swap.use(null))
    const max = stream.limits.maxInFlight
    const c = await connectWs(wsUrl, { authorization: `Bearer ${ten.token}` })
    const n = max + 6
    for (let i = 0; i < n; i++) c.send({ id: i, readings: [reading(`slow${i}`, i)] })
    const early: any[] = []
    for (let i = 0; i < n - max; i++) early.push(await c.next())
    t.ok(
      early.every((a) => a.status === 429 && /in flight/.test(a.body.message)),
      'messages past the window are refused while the store is slow',
    )
    t.same(
      early.map((a) => a.id),
      Array.from({ length: n - max }, (_, i) => i + max),
    )
    t.equal(stream.stats.inFlight, max, 'only the window is held in memory')
    release()
    const late: any[] = []
    for (let i = 0; i < max; i++) late.push(await c.next())
    t.same(
      late.map((a) => a.status),
      Array(max).fill(201),
    )
    t.equal(peak, max)

    // A producer that keeps to the window is slowed, never refused.
    let sent = 0
    let answered = 0
    const total = 40
    while (answered < total) {
      while (sent < total && sent - answered < max)
        c.send({ id: `w${sent}`, readings: [reading(`win${sent}`, 100 + sent++)] })
      const a = await c.next()
      t.not(a.status, 429)
      answered++
    }
    t.pass(`${total} messages through a window of ${max}, none refused`)
    c.close()
  },
)

t.test('a message larger than the limit closes the connection', async (t) => {
  const ten = await s.tenant()
  const c = await connectWs(wsUrl, { authorization: `Bearer ${ten.token}` })
  c.sendRaw(frame(Buffer.alloc(stream.limits.maxMessageBytes + 1, 0x20)))
  const code = await c.closed
  t.ok(code === 1006 || code === 1009, `closed (${code})`)
})

t.test('shutdown answers messages in flight before closing with 1001', async (t) => {
  // chDB allows one data directory per process, so this closes the file's own server.
  const ten = await s.tenant()
  const c = await connectWs(wsUrl, { authorization: `Bearer ${ten.token}` })
  c.send({ id: 'last', readings: [reading('bye', 1)] })
  await new Promise((r) => setTimeout(r, 5))
  const closing = s.close()
  const a = await c.next()
  t.same([a.id, a.status], ['last', 201])
  t.equal(await c.closed, 1001)
  await closing
})
