// MQTT ingest end to end against a real mosquitto: the admin resource (password never
// returned, 422s naming the field), a subscription with a preset storing what is published
// (QoS 1), duplicates answered as duplicates, unmappable messages counted and shown, status
// in the admin API and /metrics, a wrong password visible as an error, reconnect after the
// broker went away. Both store modes.
import mqtt from 'mqtt'
import t from 'tap'
import {
  MOSQUITTO_SKIP_NOTICE,
  mosquittoAvailable,
  startMosquitto,
  until,
} from '../helpers/mosquitto.js'
import { startTestServer, swappableIngest } from '../helpers/server.js'

if (!mosquittoAvailable()) {
  t.comment(MOSQUITTO_SKIP_NOTICE)
  t.pass('skipped: no mosquitto')
} else {
  const broker = await startMosquitto()
  t.teardown(() => broker.stop())
  const swap = swappableIngest()
  const srv = await startTestServer(
    { MQTT_LEASE_S: '2', MAX_BATCH_ITEMS: '5' },
    { wrapIngest: swap.wrap },
  )
  t.teardown(() => srv.close())
  const { workspaceId: ws, token } = await srv.tenant()

  const publisher = await mqtt.connectAsync(broker.url, {
    username: broker.username,
    password: broker.password,
    clientId: 'test-publisher',
  })
  t.teardown(() => publisher.endAsync())
  const publish = (topic: string, body: unknown) =>
    publisher.publishAsync(topic, typeof body === 'string' ? body : JSON.stringify(body), {
      qos: 1,
    })

  const status = async (id: number) => (await srv.admin('GET', `/mqtt-subscriptions/${id}`)).data

  const create = (body: Record<string, unknown>) =>
    srv.call('POST', `/admin/v1/workspaces/${ws}/mqtt-subscriptions`, {
      token: srv.adminToken,
      body,
    })

  /** A subscription on this broker with its credentials and the wmbusmeters preset; connected. */
  const subscribe = async (topic: string) => {
    const r = await create({
      broker_url: broker.url,
      username: broker.username,
      password: broker.password,
      topics: [topic],
      preset: 'wmbusmeters-json',
    })
    const id = r.body.data.id as number
    await until('connected', async () => (await status(id)).status.connected)
    return id
  }

  t.test('bad subscriptions are 422 naming the field', async (t) => {
    const base = { broker_url: broker.url, topics: ['a/#'], preset: 'wmbusmeters-json' }
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, broker_url: 'http://x' }, 'broker_url'],
      [{ ...base, broker_url: `mqtt://u:secret@127.0.0.1:${broker.port}` }, 'broker_url'],
      [{ ...base, topics: ['a/#/b'] }, 'topics.0'],
      [{ ...base, topics: ['a+/b'] }, 'topics.0'],
      [{ ...base, preset: 'nope' }, 'preset'],
      [{ ...base, qos: 2 }, 'qos'],
    ]
    for (const [body, field] of cases) {
      const r = await create(body)
      t.equal(r.status, 422, field)
      t.ok(r.body.errors?.[field], `errors.${field}: ${r.text}`)
      t.notMatch(r.text, /secret/, 'the password is not echoed')
    }
  })

  t.test('published messages are stored; duplicates and unmappables are counted', async (t) => {
    const r = await create({
      name: 'wmbusmeters',
      broker_url: broker.url,
      username: broker.username,
      password: broker.password,
      topics: ['wmbusmeters/#'],
      preset: 'wmbusmeters-json',
    })
    t.equal(r.status, 201, r.text)
    const sub = r.body.data
    t.equal(sub.has_password, true)
    t.notOk('password' in sub, 'the password is never returned')
    t.notMatch(r.text, new RegExp(broker.password))
    t.equal(sub.qos, 1, 'QoS 1 by default')
    await until('connected', async () => (await status(sub.id)).status.connected)

    const msg = (id: string, total: number, minute: number) => ({
      _: 'telegram',
      id,
      total_m3: total,
      timestamp: `2025-02-28T10:${String(minute).padStart(2, '0')}:00Z`,
    })
    await publish('wmbusmeters/a', msg('m1', 1.5, 0))
    await publish('wmbusmeters/a', msg('m1', 1.75, 15))
    await publish('wmbusmeters/b', msg('m2', 9, 0))
    await publish('wmbusmeters/b', { id: 'm2', current_status: 'LEAK', timestamp: 'x' })
    await publish('wmbusmeters/b', 'not json at all')
    await publish('wmbusmeters/a', msg('m1', 1.5, 0)) // a resend
    await publish('elsewhere/x', msg('m3', 1, 0)) // not subscribed

    const st = await until('six messages', async () => {
      const s = (await status(sub.id)).status
      return s.counts.messages >= 6 && s
    })
    t.same(st.counts, {
      messages: 6,
      readings_created: 3,
      readings_duplicate: 1,
      readings_rejected: 0,
      unmappable: 2,
      failed: 0,
    })
    t.ok(st.last_unmappable.reason, `last unmappable shown: ${st.last_unmappable.reason}`)
    t.equal(st.last_unmappable.topic, 'wmbusmeters/b')
    t.ok(st.last_message_at)
    t.ok(st.owner, 'the owning instance is named')

    const readings = await srv.call(
      'GET',
      '/api/v1/readings?from=2025-02-28T00:00:00Z&to=2025-03-01T00:00:00Z',
      { token },
    )
    t.same(
      readings.body.data.map((x: any) => [x.meter_identifier, x.value, x.recorded_at]),
      [
        ['m1', 1.5, '2025-02-28T10:00:00.000Z'],
        ['m2', 9, '2025-02-28T10:00:00.000Z'],
        ['m1', 1.75, '2025-02-28T10:15:00.000Z'],
      ],
    )

    const list = await srv.admin('GET', `/workspaces/${ws}/mqtt-subscriptions`)
    t.equal(list.data.length, 1)
    t.notOk('password' in list.data[0])

    const metrics = await srv.call('GET', '/metrics', { token: srv.adminToken })
    t.match(metrics.text, /meterflow_mqtt_messages_total\{outcome="stored"\} 3/)
    t.match(metrics.text, /meterflow_mqtt_messages_total\{outcome="unmappable"\} 2/)
    t.match(metrics.text, /meterflow_mqtt_messages_total\{outcome="duplicate"\} 1/)
    t.match(metrics.text, /meterflow_mqtt_subscriptions\{state="connected"\} 1/)

    // New topic filters: the dropped one is unsubscribed from the persistent session.
    const before = (await status(sub.id)).status.connected_at
    await srv.admin('PATCH', `/mqtt-subscriptions/${sub.id}`, { topics: ['meters/#'] })
    await until('reconnected', async () => {
      const s = (await status(sub.id)).status
      return s.connected && s.connected_at !== before
    })
    await publish('wmbusmeters/a', msg('m1', 2, 30)) // no longer subscribed
    await publish('meters/a', msg('m1', 2.25, 45))
    const values = async () =>
      (
        await srv.call(
          'GET',
          '/api/v1/readings?from=2025-02-28T00:00:00Z&to=2025-03-01T00:00:00Z',
          { token },
        )
      ).body.data.map((x: any) => x.value)
    const seen = await until('the message on the new filter', async () => {
      const v = await values()
      return v.includes(2.25) && v
    })
    // One connection delivers in order: the dropped topic's message would have come first.
    t.notOk(seen.includes(2), 'nothing arrives on the dropped filter')

    // Disabled: the connection closes and publishing stores nothing more.
    await srv.admin('PATCH', `/mqtt-subscriptions/${sub.id}`, { enabled: false })
    await until('disconnected', async () => !(await status(sub.id)).status.connected)
    await srv.admin('DELETE', `/mqtt-subscriptions/${sub.id}`)
    const gone = await srv.call('GET', `/admin/v1/mqtt-subscriptions/${sub.id}`, {
      token: srv.adminToken,
    })
    t.equal(gone.status, 404)
  })

  t.test('a wrong password is visible as an error, never as the password', async (t) => {
    const r = await create({
      broker_url: broker.url,
      username: broker.username,
      password: 'wrong-password-123',
      topics: ['x/#'],
      preset: 'wmbus-raw-telegram',
    })
    t.equal(r.status, 201)
    const st = await until('an error', async () => {
      const s = (await status(r.body.data.id)).status
      return s.last_error && s
    })
    t.equal(st.connected, false)
    t.match(st.last_error.message, /authori[sz]ed|refused/i)
    t.notMatch(JSON.stringify(st), /wrong-password/)
    const again = await until('a reconnect attempt', async () => {
      const s = (await status(r.body.data.id)).status
      return s.reconnects >= 1 && s
    })
    t.ok(again.reconnects >= 1, 'retries with backoff')
    await srv.admin('DELETE', `/mqtt-subscriptions/${r.body.data.id}`)
  })

  t.test(
    'a batch message: stored together; over MAX_BATCH_ITEMS it is refused whole',
    async (t) => {
      const id = await subscribe('batch/#')
      const item = (n: number) => ({ id: `b${n}`, total_kwh: n, timestamp: '2025-02-28T12:00:00Z' })
      await publish('batch/x', [1, 2, 3].map(item))
      await publish('batch/x', [1, 2, 3, 4, 5, 6].map(item))
      const st = await until('two messages', async () => {
        const s = (await status(id)).status
        return s.counts.messages >= 2 && s
      })
      t.equal(st.counts.readings_created, 3)
      t.equal(st.counts.unmappable, 1)
      t.match(st.last_unmappable.reason, /6 items; at most 5/)
      await srv.admin('DELETE', `/mqtt-subscriptions/${id}`)
    },
  )

  t.test('a message whose storage failed is not acked and comes again', async (t) => {
    const real = swap.real
    let failures = 1
    // The first call fails as a storage outage would.
    swap.use({
      ingest(req) {
        if (failures-- > 0) return Promise.reject(new Error('store unavailable (injected)'))
        return real.ingest(req)
      },
    })
    t.teardown(() => swap.use(null))
    const id = await subscribe('retry/#')
    await publish('retry/x', { id: 'r1', total_m3: 4, timestamp: '2025-02-28T13:00:00Z' })
    const st = await until('stored after redelivery', async () => {
      const s = (await status(id)).status
      return s.counts.readings_created >= 1 && s
    })
    t.equal(st.counts.failed, 1, 'the first attempt failed and was not acked')
    t.equal(st.counts.messages, 2, 'the broker delivered it again')
    t.ok(st.reconnects >= 1, 'by reconnecting')
    t.match(st.last_error.message, /store unavailable|not stored/)
    await srv.admin('DELETE', `/mqtt-subscriptions/${id}`)
  })
}
