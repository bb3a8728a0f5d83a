// Outbound events end to end: a real server on its own chDB directory, a ManualClock for
// retry delays, and real local HTTP receivers that verify signatures over the exact bytes.
import crypto from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { pino } from 'pino'
import { ManualClock } from '../../src/clock.js'
import { DeliveryEngine } from '../../src/events/engine.js'
import { Mailer } from '../../src/events/mailer.js'
import { until } from '../helpers/mosquitto.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { startReceiver, type Received } from './receiver.js'

const DELAYS = [1000, 2000, 3000, 4000]
const env = {
  EVENT_RETRY_DELAYS_MS: DELAYS.join(','),
  EVENT_TIMEOUT_MS: '1500',
  EVENT_DISABLE_AFTER: '2',
}
const clock = new ManualClock(Date.parse('2030-01-02T03:04:05.000Z'))
let s: TestServer = await startTestServer(env, { clock })
t.teardown(() => s.close())

const engine = () => s.app.parts.events.engine
const emit = (ws: number, data: Record<string, unknown> = { meter: { id: 1 } }) =>
  s.app.parts.outbox.emit(ws, 'meter.created', data)

/** The spec's verification algorithm, written out independently of src/events/signing.ts. */
function verifies(r: Received, secret: string, nowS = Math.floor(clock.now() / 1000)): boolean {
  const header = String(r.headers['x-service-signature'] ?? '')
  const parts = Object.fromEntries(
    header.split(',').map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]),
  )
  if (!parts.t || !parts.v1 || !/^\d+$/.test(parts.t)) return false
  const payload = Buffer.concat([Buffer.from(`${parts.t}.`, 'utf8'), r.body])
  const expected = crypto
    .createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(payload)
    .digest('hex')
  const a = Buffer.from(expected)
  const b = Buffer.from(parts.v1)
  if (a.length !== b.length || !crypto.timingSafeEqual(a, b)) return false
  return Math.abs(nowS - Number(parts.t)) <= 300
}

async function subscribe(ws: number, url: string, events: string[] = ['*']) {
  const r = await s.admin('POST', `/workspaces/${ws}/event-subscriptions`, { url, events })
  return r.data as {
    id: number
    url: string
    events: string[]
    enabled: boolean
    signing_secret: string
  }
}
const deliveries = async (sub: number) =>
  (await s.admin('GET', `/event-subscriptions/${sub}/deliveries`)).data
const off = (sub: number) => s.admin('PATCH', `/event-subscriptions/${sub}`, { enabled: false })

/** Settles attempts in flight, moves the clock, sends what became due. */
async function step(ms: number): Promise<number> {
  await engine().idle()
  clock.advance(ms)
  const n = await engine().runDue()
  await engine().idle()
  return n
}

/** From one failed first attempt, drives the four retries; the delivery ends exhausted. */
async function exhaust(): Promise<void> {
  for (const d of DELAYS) await step(d)
}

t.test('admin: create, validate, patch without secret', async (t) => {
  const { workspaceId: ws } = await s.tenant()
  const created = await s.call('POST', `/admin/v1/workspaces/${ws}/event-subscriptions`, {
    token: s.adminToken,
    body: { url: 'https://example.com/hook', events: ['meter.created', 'alert.opened'] },
  })
  t.equal(created.status, 201)
  t.match(created.body.data, {
    id: Number,
    url: 'https://example.com/hook',
    events: ['meter.created', 'alert.opened'],
    enabled: true,
    signing_secret: String,
  })
  t.ok(created.body.data.signing_secret.length >= 24)
  const id = created.body.data.id

  const bad = await s.call('POST', `/admin/v1/workspaces/${ws}/event-subscriptions`, {
    token: s.adminToken,
    body: { url: 'ftp://example.com/x', events: ['meter.created', 'reading.created'] },
  })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors.url, 'names url')
  t.ok(bad.body.errors.events, 'names events')
  t.match(bad.body.errors.events[0], /reading\.created/)
  const empty = await s.call('POST', `/admin/v1/workspaces/${ws}/event-subscriptions`, {
    token: s.adminToken,
    body: { url: 'https://example.com/x', events: [] },
  })
  t.equal(empty.status, 422)
  t.ok(empty.body.errors.events)
  const missing = await s.call('POST', `/admin/v1/workspaces/${ws}/event-subscriptions`, {
    token: s.adminToken,
    body: { events: ['*'] },
  })
  t.equal(missing.status, 422)
  t.ok(missing.body.errors.url)
  const noWs = await s.call('POST', `/admin/v1/workspaces/999999/event-subscriptions`, {
    token: s.adminToken,
    body: { url: 'https://example.com/x', events: ['*'] },
  })
  t.equal(noWs.status, 404)

  const patched = await s.admin('PATCH', `/event-subscriptions/${id}`, {
    events: ['*'],
    enabled: false,
  })
  t.same(patched.data, { id, url: 'https://example.com/hook', events: ['*'], enabled: false })
  const badPatch = await s.call('PATCH', `/admin/v1/event-subscriptions/${id}`, {
    token: s.adminToken,
    body: { enabled: 'yes' },
  })
  t.equal(badPatch.status, 422)
  t.ok(badPatch.body.errors.enabled)
  t.equal(
    (
      await s.call('PATCH', '/admin/v1/event-subscriptions/999999', {
        token: s.adminToken,
        body: {},
      })
    ).status,
    404,
  )
  t.equal(
    (await s.call('POST', '/admin/v1/deliveries/nope/retry', { token: s.adminToken })).status,
    404,
  )
  t.equal(
    (
      await s.call('GET', '/admin/v1/event-subscriptions/999999/deliveries', {
        token: s.adminToken,
      })
    ).status,
    404,
  )
})

t.test('delivery: headers, envelope and signature over the exact bytes', async (t) => {
  const rx = await startReceiver(204)
  t.teardown(() => rx.close())
  const { workspaceId: ws } = await s.tenant()
  const sub = await subscribe(ws, rx.url, ['meter.created'])
  const data = {
    meter: { id: 7, identifier: 'MÄTER-ü-7', name: 'Kitchen', unit: 'm3', group_id: 3 },
  }
  await s.app.parts.outbox.emit(ws, 'alert.opened', { alert: { id: 1 } }) // not subscribed
  await emit(ws, data)
  const [r] = await rx.waitFor(1)
  await engine().idle()
  t.equal(rx.received.length, 1, 'only the subscribed event')
  t.equal(r!.headers['content-type'], 'application/json')
  t.equal(r!.headers['x-service-event'], 'meter.created')
  t.match(
    r!.headers['x-service-delivery'],
    /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  )
  t.match(r!.headers['x-service-signature'], /^t=\d+,v1=[0-9a-f]{64}$/)
  t.ok(verifies(r!, sub.signing_secret), 'signature verifies')
  t.notOk(verifies(r!, sub.signing_secret + 'x'), 'a wrong secret does not')
  // Re-encoding the parsed body must not be needed (and here it would even match); a byte
  // flipped in the body breaks it.
  const flipped = {
    ...r!,
    body: Buffer.from(r!.body.toString('utf8').replace('Kitchen', 'Kitchem')),
  }
  t.notOk(verifies(flipped, sub.signing_secret))
  t.notOk(
    verifies(r!, sub.signing_secret, Math.floor(clock.now() / 1000) + 301),
    'outside tolerance',
  )

  const env = JSON.parse(r!.body.toString('utf8'))
  t.same(env, {
    id: r!.headers['x-service-delivery'],
    event: 'meter.created',
    occurred_at: new Date(clock.now()).toISOString(),
    workspace: { id: ws },
    data,
  })
  t.match(env.occurred_at, /(Z|[+-]\d\d:\d\d)$/)

  const log = await deliveries(sub.id)
  t.equal(log.length, 1)
  t.same(log[0], {
    id: env.id,
    event: 'meter.created',
    status: 'delivered',
    attempts: 1,
    last_status_code: 204,
    last_error: null,
    next_attempt_at: null,
    created_at: new Date(clock.now()).toISOString(),
  })
  await off(sub.id)
})

t.test('retries with the configured delays, same delivery id, then manual retry', async (t) => {
  const rx = await startReceiver(500)
  t.teardown(() => rx.close())
  const { workspaceId: ws } = await s.tenant()
  const sub = await subscribe(ws, rx.url)
  await emit(ws)
  await rx.waitFor(1)
  await engine().idle()
  const t0 = clock.now()
  let [d] = await deliveries(sub.id)
  t.match(d, { status: 'pending', attempts: 1, last_status_code: 500, last_error: 'HTTP 500' })
  t.equal(d.next_attempt_at, new Date(t0 + DELAYS[0]!).toISOString())

  for (const [i, delay] of DELAYS.entries()) {
    t.equal(await step(delay - 1), 0, `retry ${i + 1} not before its delay`)
    t.equal(rx.received.length, i + 1)
    t.equal(await step(1), 1, `retry ${i + 1} after ${delay} ms`)
    t.equal(rx.received.length, i + 2)
    t.ok(
      verifies(rx.received[i + 1]!, sub.signing_secret),
      `retry ${i + 1} signed at its send time`,
    )
  }
  ;[d] = await deliveries(sub.id)
  t.match(d, { status: 'failed', attempts: 5, last_status_code: 500, next_attempt_at: null })
  await step(10 * 60_000)
  t.equal(rx.received.length, 5, 'no sixth attempt')
  const ids = new Set(rx.received.map((r) => r.headers['x-service-delivery']))
  t.same([...ids], [d.id], 'one X-Service-Delivery across all attempts')
  t.ok(
    rx.received.every((r) => r.body.equals(rx.received[0]!.body)),
    'same bytes every time',
  )

  rx.answer(200)
  const retry = await s.call('POST', `/admin/v1/deliveries/${d.id}/retry`, { token: s.adminToken })
  t.equal(retry.status, 202)
  await rx.waitFor(6)
  await engine().idle()
  t.equal(rx.received[5]!.headers['x-service-delivery'], d.id, 'manual retry keeps the id')
  ;[d] = await deliveries(sub.id)
  t.match(d, { status: 'delivered', attempts: 1, last_status_code: 200, last_error: null })
  await off(sub.id)
})

t.test('a timeout counts as a failed attempt', async (t) => {
  const rx = await startReceiver('hang')
  t.teardown(() => rx.close())
  const { workspaceId: ws } = await s.tenant()
  const sub = await subscribe(ws, rx.url)
  const started = Date.now()
  await emit(ws)
  await rx.waitFor(1)
  await engine().idle()
  t.ok(Date.now() - started >= 1400, 'waited for EVENT_TIMEOUT_MS')
  const [d] = await deliveries(sub.id)
  t.match(d, { status: 'pending', attempts: 1, last_status_code: null, last_error: /timeout/ })
  await off(sub.id)
})

t.test(
  'switch-off after EVENT_DISABLE_AFTER exhausted deliveries, one mail per owner',
  async (t) => {
    const rx = await startReceiver(503)
    t.teardown(() => rx.close())
    const { workspaceId: ws } = await s.tenant() // owner@example.com
    await s.admin('POST', `/workspaces/${ws}/users`, {
      email: 'second-owner@example.com',
      owner: true,
    })
    await s.admin('POST', `/workspaces/${ws}/users`, { email: 'member@example.com', owner: false })
    const sub = await subscribe(ws, rx.url)
    const enabled = async () =>
      (await s.admin('GET', `/event-subscriptions/${sub.id}`)).data.enabled

    await emit(ws)
    await rx.waitFor(1)
    await exhaust()
    t.equal(rx.received.length, 5)
    t.equal(await enabled(), true, 'one exhausted delivery is not enough')

    rx.answer(200)
    await emit(ws)
    await rx.waitFor(6)
    await engine().idle()
    t.equal(await enabled(), true)

    rx.answer(503)
    await emit(ws)
    await rx.waitFor(7)
    await exhaust()
    t.equal(await enabled(), true, 'a delivered one reset the count')
    t.same((await s.admin('GET', `/workspaces/${ws}/outbox`)).data, [])

    await emit(ws)
    await rx.waitFor(12)
    await exhaust()
    t.equal(rx.received.length, 16)
    t.equal(await enabled(), false, 'switched off')

    const mails = (await s.admin('GET', `/workspaces/${ws}/outbox`)).data
    t.equal(mails.length, 2)
    t.same(mails.map((m: any) => m.to).sort(), ['owner@example.com', 'second-owner@example.com'])
    for (const m of mails) {
      t.match(m, {
        subject: /switched off/,
        body: new RegExp(rx.url.replace(/[.?*+^$[\]\\(){}|-]/g, '\\$&')),
        created_at: String,
      })
    }

    // Switched off: new events make no deliveries, nothing more is sent.
    await emit(ws)
    await step(60_000)
    t.equal(rx.received.length, 16)
    t.equal((await deliveries(sub.id)).length, 4)
    t.equal((await deliveries(sub.id)).filter((d: any) => d.status === 'failed').length, 3)
  },
)

t.test(
  'rotation: the next attempt, also a retry of an older delivery, uses the new secret',
  async (t) => {
    const rx = await startReceiver(500)
    t.teardown(() => rx.close())
    const { workspaceId: ws } = await s.tenant()
    const sub = await subscribe(ws, rx.url)
    await emit(ws)
    const [first] = await rx.waitFor(1)
    await engine().idle()
    t.ok(verifies(first!, sub.signing_secret))

    const rot = await s.admin('POST', `/event-subscriptions/${sub.id}/rotate-secret`)
    const secret2 = rot.data.signing_secret as string
    t.not(secret2, sub.signing_secret)
    t.same(Object.keys(rot.data), ['signing_secret'])

    rx.answer(200)
    await step(DELAYS[0]!)
    const retry = rx.received[1]!
    t.equal(retry.headers['x-service-delivery'], first!.headers['x-service-delivery'])
    t.ok(verifies(retry, secret2), 'retry verifies with the new secret')
    t.notOk(verifies(retry, sub.signing_secret), 'old secret stops verifying at once')

    await emit(ws)
    const [, , fresh] = await rx.waitFor(3)
    t.ok(verifies(fresh!, secret2))
    t.notOk(verifies(fresh!, sub.signing_secret))
    await engine().idle()
    await off(sub.id)
  },
)

t.test('a slow target delays neither the emitter nor another target', async (t) => {
  const slow = await startReceiver('hang')
  const fast = await startReceiver(200)
  t.teardown(() => Promise.all([slow.close(), fast.close()]))
  const { workspaceId: ws } = await s.tenant()
  const a = await subscribe(ws, slow.url)
  const b = await subscribe(ws, fast.url)

  // Causal, not timed: the slow target never answers within its timeout, so anything that
  // waited for it would still show its first attempt unfinished.
  await emit(ws, { n: 1 })
  await emit(ws, { n: 2 })
  const atEmit = await deliveries(a.id)
  t.ok(
    atEmit.every((d: any) => d.status === 'pending'),
    'emit returned while the slow target still holds its first delivery',
  )
  await fast.waitFor(2)
  t.ok(
    (await deliveries(a.id)).every((d: any) => d.status === 'pending' && d.attempts === 0),
    'the fast target got both while the slow one still holds its first attempts',
  )
  let d1: any
  for (let i = 0; i < 100 && d1?.status !== 'delivered'; i++) {
    ;[d1] = await deliveries(b.id)
    if (d1?.status !== 'delivered') await new Promise((r) => setTimeout(r, 50))
  }
  t.equal(d1.status, 'delivered', 'recorded as delivered once the answer is in')
  await engine().idle()
  await off(a.id)
  await off(b.id)
})

t.test('pending deliveries survive a restart', async (t) => {
  const rx = await startReceiver(200)
  t.teardown(() => rx.close())
  const { workspaceId: ws } = await s.tenant()
  const sub = await subscribe(ws, rx.url)
  // Stop sending, so the events are written but never attempted before the shutdown.
  await engine().stop()
  for (let n = 0; n < 3; n++) await emit(ws, { n })
  await new Promise((r) => setTimeout(r, 300))
  t.equal(rx.received.length, 0)
  const before = await deliveries(sub.id)
  t.equal(before.length, 3)
  t.ok(before.every((d: any) => d.status === 'pending' && d.attempts === 0))

  const dataDir = s.dataDir
  await s.close()
  s = await startTestServer(env, { clock, dataDir })
  await rx.waitFor(3)
  await engine().idle()
  t.same(
    rx.received.map((r) => r.headers['x-service-delivery']).sort(),
    before.map((d: any) => d.id).sort(),
    'each pending delivery arrives, with its id',
  )
  t.ok(rx.received.every((r) => verifies(r, sub.signing_secret)))
  const after = await deliveries(sub.id)
  t.ok(after.every((d: any) => d.status === 'delivered'))
  t.same(
    after.map(
      (d: any) =>
        JSON.parse(
          rx.received.find((r) => r.headers['x-service-delivery'] === d.id)!.body.toString(),
        ).data.n,
    ),
    [2, 1, 0],
    'log newest first',
  )
})

t.test(
  "a backlog in pages: each target's next page follows its last, polls do not scan",
  async (t) => {
    // Target a holds its answers until told to answer; target b answers at once.
    const got = { a: [] as Buffer[], b: [] as Buffer[] }
    const held: http.ServerResponse[] = []
    let answering = false
    const receiver = async (name: 'a' | 'b') => {
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c: Buffer) => chunks.push(c))
        req.on('end', () => {
          got[name].push(Buffer.concat(chunks))
          if (name === 'b' || answering) res.writeHead(204).end()
          else held.push(res)
        })
      })
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      t.teardown(() => server.close())
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
    }
    const { workspaceId: ws } = await s.tenant()
    const a = await subscribe(ws, await receiver('a'))
    const b = await subscribe(ws, await receiver('b'))
    // Stored but never handed over: the engine of the server is stopped, so only scans find them.
    await engine().stop()
    for (let n = 0; n < 12; n++) await emit(ws, { n })
    const { repo } = s.app.parts.events
    let scans = 0
    const counted = Object.create(repo) as typeof repo
    counted.dueDeliveries = (...args) => (scans++, repo.dueDeliveries(...args))
    const log = pino({ level: 'silent' })
    const paged = new DeliveryEngine(
      counted,
      s.app.parts.tenants,
      new Mailer(repo, clock, log),
      s.app.parts.coord,
      clock,
      log,
      {
        retryDelaysMs: DELAYS,
        timeoutMs: 60_000,
        disableAfter: 2,
        blockPrivate: false,
        perTarget: 5,
        pollMs: 1000,
        rescanMs: 1e9,
      },
    )
    t.teardown(() => paged.stop())
    paged.start()
    await until('b has all twelve', async () => got.b.length >= 12)
    t.equal(held.length, 1, 'while a still holds its first attempt')
    // Poll periods pass while a's first page is held: its rows are all in flight, so a scan
    // would only find them again.
    for (let i = 0; i < 3; i++) {
      clock.advance(1000)
      await new Promise((r) => setTimeout(r, 50))
    }
    t.equal(scans, 3, "b's pages of 5, 5 and 2, one scan each; none for the polls")
    answering = true
    for (const r of held.splice(0)) r.writeHead(204).end()
    await until('a has all twelve', async () => got.a.length >= 12)
    await paged.idle()
    const ns = (bodies: Buffer[]) =>
      bodies.map((x) => JSON.parse(x.toString()).data.n).sort((x: number, y: number) => x - y)
    const twelve = Array.from({ length: 12 }, (_, n) => n)
    t.same([ns(got.a), ns(got.b)], [twelve, twelve], 'every delivery of both backlogs, once')
    t.equal(scans, 5, "then a's next two pages, one scan each")
    for (const sub of [a, b])
      t.ok((await deliveries(sub.id)).every((d: any) => d.status === 'delivered'))
  },
)
