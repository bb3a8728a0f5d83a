// One connection per MQTT subscription across instances: two instances sharing a ClickHouse
// server and Redis both run the subscription manager; exactly one holds the lease and is
// connected, and when it stops the other takes the subscription over. Cluster mode only
// (two instances in embedded mode do not share a store); embedded mode says so and skips.
import mqtt from 'mqtt'
import t from 'tap'
import { clusterMode } from '../helpers/clickhouse.js'
import {
  MOSQUITTO_SKIP_NOTICE,
  mosquittoAvailable,
  startMosquitto,
  until,
} from '../helpers/mosquitto.js'
import { startTestServer, tmpDataDir } from '../helpers/server.js'

if (!mosquittoAvailable()) {
  t.comment(MOSQUITTO_SKIP_NOTICE)
  t.pass('skipped: no mosquitto')
} else if (!clusterMode) {
  t.comment('cluster mode only (TEST_CLUSTER=1): instances share Redis and a ClickHouse server')
  t.pass('skipped: embedded mode')
} else {
  t.test('one owner at a time, takeover when it stops', async (t) => {
    const broker = await startMosquitto()
    t.teardown(() => broker.stop())
    const dataDir = tmpDataDir()
    const a = await startTestServer({ MQTT_LEASE_S: '2' }, { dataDir })
    const b = await startTestServer({ MQTT_LEASE_S: '2', ADMIN_TOKEN: a.adminToken }, { dataDir })
    // close() is idempotent: the owner is closed again here after the takeover test.
    t.teardown(() => Promise.all([a.close(), b.close()]))
    const { workspaceId: ws, token } = await a.tenant()
    const sub = (
      await a.admin('POST', `/workspaces/${ws}/mqtt-subscriptions`, {
        broker_url: broker.url,
        username: broker.username,
        password: broker.password,
        topics: ['wmbusmeters/#'],
        preset: 'wmbusmeters-json',
      })
    ).data
    const owners = () =>
      [a, b].map((x) => x.app.parts.mqtt.manager!.owned().filter((s) => s.sub.id === sub.id))
    const st = async () => (await b.admin('GET', `/mqtt-subscriptions/${sub.id}`)).data.status
    await until('connected', async () => (await st()).connected)
    // Both managers have synced several times by now (a third of the lease each).
    await new Promise((r) => setTimeout(r, 2500))
    const [ownedA, ownedB] = owners()
    t.equal(ownedA!.length + ownedB!.length, 1, 'exactly one instance runs the subscription')
    const first = ownedA!.length ? a : b
    const second = first === a ? b : a
    const firstOwner = (await st()).owner
    t.equal(firstOwner, first.app.parts.mqtt.manager!.owner, 'status names the owner')

    await first.close()
    const next = await until('takeover', async () => {
      const s = await second.admin('GET', `/mqtt-subscriptions/${sub.id}`)
      return s.data.status.connected && s.data.status.owner !== firstOwner && s.data.status
    })
    t.equal(next.owner, second.app.parts.mqtt.manager!.owner, 'the other instance took over')

    const pub = await mqtt.connectAsync(broker.url, {
      username: broker.username,
      password: broker.password,
    })
    await pub.publishAsync(
      'wmbusmeters/x',
      JSON.stringify({ id: 'after', total_m3: 1, timestamp: '2025-02-28T10:00:00Z' }),
      { qos: 1 },
    )
    await pub.endAsync()
    const r = await until('stored by the new owner', async () => {
      const q = await second.call(
        'GET',
        '/api/v1/readings?from=2025-02-28T00:00:00Z&to=2025-03-01T00:00:00Z',
        { token },
      )
      return q.body.data.length > 0 && q.body.data
    })
    t.equal(r[0].meter_identifier, 'after')
  })
}
