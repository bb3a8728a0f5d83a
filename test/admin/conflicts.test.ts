// 409 answers of the admin API (issue 14, item 12): a second user with the same e-mail in a
// workspace, and a manual retry of a delivery that was already delivered.
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { startReceiver } from '../events/receiver.js'
import { startTestServer } from '../helpers/server.js'

const clock = new ManualClock(Date.parse('2030-01-02T03:04:05.000Z'))
const s = await startTestServer({}, { clock })
t.teardown(() => s.close())
const call = (method: string, path: string, body?: unknown) =>
  s.call(method, `/admin/v1${path}`, { token: s.adminToken, body })

t.test('a duplicate user e-mail in a workspace is 409 {message}', async (t) => {
  const ws = (await s.admin('POST', '/workspaces', { name: 'dup' })).data.id
  const first = await call('POST', `/workspaces/${ws}/users`, { email: 'ops@example.com' })
  t.equal(first.status, 201, first.text)
  for (const email of ['ops@example.com', 'OPS@Example.com']) {
    const again = await call('POST', `/workspaces/${ws}/users`, { email })
    t.equal(again.status, 409, again.text)
    t.type(again.body.message, 'string')
    t.match(again.body.message, /e-mail/)
  }
  // Concurrent POSTs of one address: exactly one user.
  const race = await Promise.all(
    Array.from({ length: 4 }, () =>
      call('POST', `/workspaces/${ws}/users`, { email: 'race@example.com' }),
    ),
  )
  t.same(race.map((r) => r.status).sort(), [201, 409, 409, 409])
  const users = (await call('GET', `/workspaces/${ws}/users`)).body.data
  t.equal(users.length, 2, 'ops and race, once each')
  // The same address in another workspace is fine.
  const other = (await s.admin('POST', '/workspaces', { name: 'other' })).data.id
  t.equal(
    (await call('POST', `/workspaces/${other}/users`, { email: 'ops@example.com' })).status,
    201,
  )
})

t.test('a manual retry of a delivered delivery is 409 and sends nothing', async (t) => {
  const rx = await startReceiver(200)
  t.teardown(() => rx.close())
  const ws = (await s.admin('POST', '/workspaces', { name: 'events' })).data.id
  const sub = (
    await s.admin('POST', `/workspaces/${ws}/event-subscriptions`, {
      url: rx.url,
      events: ['*'],
    })
  ).data
  const engine = s.app.parts.events.engine
  await s.app.parts.outbox.emit(ws, 'meter.created', { meter: { id: 1 } })
  await engine.runDue()
  await engine.idle()
  await rx.waitFor(1)
  const [d] = (await s.admin('GET', `/event-subscriptions/${sub.id}/deliveries`)).data
  t.equal(d.status, 'delivered')
  const r = await call('POST', `/deliveries/${d.id}/retry`)
  t.equal(r.status, 409, r.text)
  t.type(r.body.message, 'string')
  clock.advance(60_000)
  await engine.runDue()
  await engine.idle()
  t.equal(rx.received.length, 1, 'not sent again')
  const [after] = (await s.admin('GET', `/event-subscriptions/${sub.id}/deliveries`)).data
  t.equal(after.status, 'delivered')
  t.equal(after.attempts, d.attempts)
})
