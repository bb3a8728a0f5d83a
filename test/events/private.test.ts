// EVENT_BLOCK_PRIVATE_TARGETS=1: private and loopback subscriber URLs are refused on the
// admin call (422 naming url) and, should one be in the store anyway, before each send.
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { startTestServer } from '../helpers/server.js'
import { startReceiver } from './receiver.js'

const clock = new ManualClock(Date.parse('2030-01-02T03:04:05.000Z'))
const s = await startTestServer({ EVENT_BLOCK_PRIVATE_TARGETS: '1' }, { clock })
t.teardown(() => s.close())

t.test('admin call: 422 for private and loopback URLs', async (t) => {
  const { workspaceId: ws } = await s.tenant()
  for (const url of [
    'http://127.0.0.1:9999/hook',
    'http://localhost/hook',
    'http://10.1.2.3/hook',
    'http://192.168.1.1/',
    'http://172.20.0.1/',
    'http://169.254.169.254/latest',
    'http://[::1]:8080/',
    'http://[fd00::1]/',
    'http://[::ffff:127.0.0.1]/',
  ]) {
    const r = await s.call('POST', `/admin/v1/workspaces/${ws}/event-subscriptions`, {
      token: s.adminToken,
      body: { url, events: ['*'] },
    })
    t.equal(r.status, 422, url)
    t.ok(r.body.errors?.url, `${url} names url`)
  }
  const ok = await s.admin('POST', `/workspaces/${ws}/event-subscriptions`, {
    url: 'https://93.184.216.34/hook',
    events: ['*'],
  })
  t.equal(ok.data.url, 'https://93.184.216.34/hook')
  const patch = await s.call('PATCH', `/admin/v1/event-subscriptions/${ok.data.id}`, {
    token: s.adminToken,
    body: { url: 'http://127.0.0.1/' },
  })
  t.equal(patch.status, 422)
  t.ok(patch.body.errors.url)
  await s.admin('PATCH', `/event-subscriptions/${ok.data.id}`, { enabled: false })
})

t.test('send time: a stored loopback target is refused, nothing is sent', async (t) => {
  const rx = await startReceiver(200)
  t.teardown(() => rx.close())
  const { workspaceId: ws } = await s.tenant()
  const { repo, outbox, engine } = s.app.parts.events
  const id = await repo.nextSubscriptionId()
  await repo.saveSubscription({
    id,
    workspace_id: ws,
    url: rx.url,
    events: ['*'],
    enabled: true,
    signing_secret: 'whsec_test',
    consecutive_failures: 0,
    created_at: clock.now(),
  })
  await outbox.invalidate()
  await outbox.emit(ws, 'meter.created', { n: 1 })
  await engine.runDue()
  await engine.idle()
  const [d] = (await s.admin('GET', `/event-subscriptions/${id}/deliveries`)).data
  t.match(d, { status: 'pending', attempts: 1, last_status_code: null, last_error: /private/ })
  t.equal(rx.received.length, 0)
})
