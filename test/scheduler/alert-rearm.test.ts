// A member-resolved alert stays resolved while its condition keeps holding, and opens again
// only after the condition cleared and returned (issue 14, "Also"; docs/alerts.md).
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { chTime } from '../../src/store/sql.js'
import { newMeter } from '../../src/store/meter-row.js'
import { startTestServer } from '../helpers/server.js'

const clock = new ManualClock(Date.parse('2025-03-10T12:00:00Z'))
const srv = await startTestServer({}, { clock })
t.teardown(() => srv.close())
const s = srv.app.parts
const events: string[] = []
const emit = s.outbox.emit.bind(s.outbox)
s.outbox.emit = async (ws, event, data) => {
  events.push(event)
  return emit(ws, event, data)
}
const run = async () => (await srv.admin('POST', '/scheduler/run')).data
async function status(ws: number, meterId: number, statuses: string[]) {
  clock.advance(60_000)
  await s.store.sql.insert(
    'status_reports',
    JSON.stringify({
      workspace_id: ws,
      meter_id: meterId,
      reported_at: chTime(clock.now()),
      raw_flags: statuses,
      statuses,
      version: s.store.version(),
    }),
  )
}

t.test('member resolve: quiet while the condition holds, re-armed once it cleared', async (t) => {
  const { workspaceId: ws } = await srv.tenant()
  await srv.admin('POST', `/workspaces/${ws}/alert-rules`, {
    type: 'status',
    params: { statuses: ['leak'] },
  })
  const created = await s.meters.create(ws, newMeter('leaky', { unit: 'm3' }))
  if (!('meter' in created)) throw new Error('refused')
  const m = created.meter
  const alerts = async (state: string) =>
    (await srv.admin('GET', `/workspaces/${ws}/alerts?state=${state}`)).data

  await status(ws, m.id, ['leak'])
  t.equal((await run()).alerts_opened, 1)
  const [a] = await alerts('open')
  const res = await srv.admin('POST', `/alerts/${a.id}/resolve`, { by: 'ops@example.com' })
  t.equal(res.data.state, 'resolved')

  // The leak is still reported: passes (and newer reports of it) open nothing.
  events.length = 0
  t.equal((await run()).alerts_opened, 0, 'not reopened on the next pass')
  await status(ws, m.id, ['leak'])
  t.equal((await run()).alerts_opened, 0, 'nor after another report of the same condition')
  t.same(await alerts('open'), [])
  t.notOk(events.includes('alert.opened'))

  // The condition clears (nothing to resolve), then returns: a new alert opens.
  await status(ws, m.id, [])
  const cleared = await run()
  t.match(cleared, { alerts_opened: 0, alerts_resolved: 0 })
  await status(ws, m.id, ['leak'])
  t.equal((await run()).alerts_opened, 1, 'opens again after clearing and returning')
  const open = await alerts('open')
  t.equal(open.length, 1)
  t.not(open[0].id, a.id)

  // A system-resolved alert is not held back: it reopens as soon as the condition holds.
  await status(ws, m.id, [])
  t.equal((await run()).alerts_resolved, 1)
  await status(ws, m.id, ['leak'])
  t.equal((await run()).alerts_opened, 1)
})
