// MQTT ingest survives kill -9: a real service process subscribed with QoS 1 is SIGKILLed
// while it works through a backlog, more messages are published while it is down (kept by
// the broker's persistent session), and after a restart every message is stored exactly
// once: nothing lost (PUBACK only after storage), nothing double counted (redelivered
// messages are duplicates). Both store modes (cluster: the lease of the dead process runs
// out first, MQTT_LEASE_S=2).
import fs from 'node:fs'
import mqtt from 'mqtt'
import t from 'tap'
import { clusterEnv, clusterMode } from '../helpers/clickhouse.js'
import {
  MOSQUITTO_SKIP_NOTICE,
  mosquittoAvailable,
  startMosquitto,
  until,
} from '../helpers/mosquitto.js'
import { request, tmpDataDir } from '../helpers/server.js'
import { startProc, type Proc } from '../helpers/proc.js'

if (!mosquittoAvailable()) {
  t.comment(MOSQUITTO_SKIP_NOTICE)
  t.pass('skipped: no mosquitto')
} else {
  t.test('kill -9 and restart: every message stored once', async (t) => {
    const broker = await startMosquitto()
    t.teardown(() => broker.stop())
    const dataDir = tmpDataDir()
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))
    const ADMIN = 'mqtt-crash-admin-token-0123456789'
    const env = {
      DATA_DIR: dataDir,
      ADMIN_TOKEN: ADMIN,
      MQTT_LEASE_S: '2',
      ...(clusterMode ? await clusterEnv(dataDir) : {}),
    }
    const procs: Proc[] = []
    t.teardown(() => Promise.all(procs.map((p) => p.kill('SIGKILL'))))
    const a = await startProc(env)
    procs.push(a)
    const admin = async (url: string, m: string, path: string, body?: unknown) =>
      (await request(url, m, `/admin/v1${path}`, { token: ADMIN, body })).body

    const ws = (await admin(a.url, 'POST', '/workspaces', { name: 'mqtt-crash' })).data
    const user = (await admin(a.url, 'POST', `/workspaces/${ws.id}/users`, { email: 'a@b.c' })).data
    const token = (
      await admin(a.url, 'POST', `/workspaces/${ws.id}/tokens`, {
        user_id: user.id,
        scopes: ['data:read'],
        rate_limit_per_minute: 1_000_000,
      })
    ).data.token
    const sub = (
      await admin(a.url, 'POST', `/workspaces/${ws.id}/mqtt-subscriptions`, {
        broker_url: broker.url,
        username: broker.username,
        password: broker.password,
        topics: ['meters/+/consumption'],
        qos: 1,
        mapping: {
          fields: {
            meter: 'm',
            kind: "'consumption'",
            value: 'v',
            unit: "'kwh'",
            recorded_at: 't',
          },
        },
      })
    ).data
    t.ok(sub.id, 'subscription created')
    const status = async (url: string) =>
      (await admin(url, 'GET', `/mqtt-subscriptions/${sub.id}`)).data.status
    await until('A connected', async () => (await status(a.url)).connected)

    const publisher = await mqtt.connectAsync(broker.url, {
      username: broker.username,
      password: broker.password,
    })
    t.teardown(() => publisher.endAsync())
    const T0 = Date.UTC(2025, 0, 1)
    const publish = (i: number) =>
      publisher.publishAsync(
        `meters/c${i % 4}/consumption`,
        JSON.stringify({ m: `c${i % 4}`, v: 1, t: new Date(T0 + i * 60_000).toISOString() }),
        { qos: 1 },
      )
    const FIRST = 400
    const SECOND = 100
    await Promise.all(Array.from({ length: FIRST }, (_, i) => publish(i)))

    // Kill A while it works through the backlog.
    const before = await until('A mid-backlog', async () => {
      const s = await status(a.url)
      return s.counts.messages >= 40 && s.counts.messages
    })
    await a.kill('SIGKILL')
    t.ok(before < FIRST + SECOND, `killed after ${before} of ${FIRST} messages were handled`)

    // Published while nobody is connected: the persistent session keeps them.
    await Promise.all(Array.from({ length: SECOND }, (_, i) => publish(FIRST + i)))

    const b = await startProc(env)
    procs.push(b)
    const range = `from=2025-01-01T00:00:00Z&to=2025-01-02T00:00:00Z`
    const total = async () =>
      (await request(b.url, 'GET', `/api/v1/readings?${range}&per_page=1`, { token })).body.meta
        .total as number
    // A loaded machine is slow, not stuck: wait as long as the count keeps moving.
    let last = -1
    let still = 0
    for (let n = await total(); n < FIRST + SECOND; n = await total()) {
      still = n === last ? still + 1 : 0
      last = n
      if (still > 120)
        throw new Error(`stuck at ${n} readings: ${JSON.stringify(await status(b.url))}`)
      await new Promise((r) => setTimeout(r, 500))
    }
    // Let B finish whatever redelivery is still in flight, then count for real.
    await until('B idle', async () => {
      const s1 = await status(b.url)
      await new Promise((r) => setTimeout(r, 500))
      const s2 = await status(b.url)
      return s1.counts.messages === s2.counts.messages && s2
    })
    t.equal(await total(), FIRST + SECOND, 'nothing lost, no reading stored twice')

    const daily = (
      await request(b.url, 'GET', `/api/v1/readings?${range}&aggregate=daily&kind=consumption`, {
        token,
      })
    ).body.data
    const sum = daily.reduce((a: number, r: any) => a + r.sum, 0)
    const count = daily.reduce((a: number, r: any) => a + r.reading_count, 0)
    t.equal(sum, FIRST + SECOND, 'the daily consumption counts each message once')
    t.equal(count, FIRST + SECOND)

    const s = await status(b.url)
    t.equal(s.counts.failed, 0)
    t.comment(
      `after restart: ${s.counts.messages} messages handled, ${s.counts.readings_duplicate} answered as duplicates (redelivered after the kill)`,
    )
    await b.kill('SIGTERM')
  })
}
