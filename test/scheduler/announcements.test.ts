// meter.created after a stop between the meters INSERT and the outbox INSERT: the
// scheduler's announcements task finds those meters (after a minute's grace) and emits their
// event once, dated at creation, to the subscriptions that existed by then.
import t from 'tap'
import { newMeter } from '../../src/store/meter-row.js'
import { announceMissedMeters } from '../../src/scheduler/announcements.js'
import { startTestServer } from '../helpers/server.js'

const srv = await startTestServer()
t.teardown(() => srv.close())
const s = srv.app.parts

t.test('meters stored without their meter.created are announced once', async (t) => {
  const { token, workspaceId: ws } = await srv.tenant()
  const sub = await srv.admin('POST', `/workspaces/${ws}/event-subscriptions`, {
    url: 'http://127.0.0.1:9/hook',
    events: ['meter.created'],
  })
  // Announced the normal way.
  const r = await srv.call('POST', '/api/v1/reportData', {
    token,
    body: {
      readings: [
        {
          meter: 'live',
          kind: 'saldo',
          value: 1,
          unit: 'kwh',
          recorded_at: '2025-01-01T00:00:00Z',
        },
      ],
    },
  })
  t.equal(r.status, 201)
  // Stored, then the process stopped before the outbox write: createMany emits nothing.
  const made = await s.meters.createMany(
    ws,
    ['lost-1', 'lost-2', 'lost-3'].map((id) => newMeter(id, { unit: 'kwh' })),
  )
  const lost = made.map((m) => ('meter' in m ? m.meter.id : -1))
  const created = async (subId: number) => {
    const rows = await s.store.sql.query<{ id: string }>(
      `SELECT toString(JSONExtractUInt(body, 'data', 'meter', 'id')) AS id FROM event_deliveries FINAL
       WHERE subscription_id = {sub:UInt64} AND event = 'meter.created' ORDER BY id`,
      { sub: subId },
    )
    return rows.map((x) => Number(x.id))
  }
  const live = (await s.meters.byIdentifier(ws, 'live'))!.id
  t.same(await created(sub.data.id), [live])

  // Within the grace minute a live instance may still be about to emit: nothing yet.
  t.same(await announceMissedMeters(s, Date.now() + 30_000), { announced: 0 })
  // A subscription made after the meters does not get their creation.
  const later = await srv.admin('POST', `/workspaces/${ws}/event-subscriptions`, {
    url: 'http://127.0.0.1:9/later',
    events: ['*'],
  })
  t.same(await announceMissedMeters(s, Date.now() + 120_000), { announced: 3 })
  t.same(
    await created(sub.data.id),
    [live, ...lost].sort((a, b) => a - b),
  )
  t.same(await created(later.data.id), [])
  const [body] = await s.store.sql.query<{ body: string }>(
    `SELECT body FROM event_deliveries FINAL
     WHERE subscription_id = {sub:UInt64} AND JSONExtractUInt(body, 'data', 'meter', 'id') = {id:UInt64}`,
    { sub: sub.data.id, id: lost[0]! },
  )
  const env = JSON.parse(body!.body)
  t.equal(env.data.meter.identifier, 'lost-1')
  const meter = (await s.meters.byId(ws, lost[0]!))!
  t.equal(env.occurred_at, new Date(meter.created_at).toISOString(), 'dated at creation')
  // Once stored, never again.
  t.same(await announceMissedMeters(s, Date.now() + 120_000), { announced: 0 })
})
