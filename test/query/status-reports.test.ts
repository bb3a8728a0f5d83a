import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { startTestServer } from '../helpers/server.js'
import { createMeter, insertStatus, qs } from './helpers.js'

const clock = new ManualClock(Date.parse('2025-06-15T12:00:00Z'))
const s = await startTestServer({}, { clock })
t.teardown(() => s.close())
const a = await s.tenant()
const other = await s.tenant()
const get = (q: Record<string, string | number | undefined>, token = a.token) =>
  s.call('GET', `/api/v1/statusReports${qs(q)}`, { token })

t.test('newest first, row shape, leak appearing and clearing is two rows', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'st-1' })
  const n = await createMeter(s, a.token, { meter_identifier: 'st-2' })
  await insertStatus(s, a.workspaceId, m.id, '2025-06-14T08:00:00Z', ['LEAK'], ['leak'])
  await insertStatus(s, a.workspaceId, m.id, '2025-06-14T09:00:00Z', [], [])
  await insertStatus(
    s,
    a.workspaceId,
    n.id,
    '2025-06-14T08:30:00Z',
    ['BATT', 'XYZ'],
    ['low_battery', 'error'],
  )
  await insertStatus(s, a.workspaceId, m.id, '2025-06-14T09:00:00Z', [], []) // replay
  await insertStatus(s, a.workspaceId, m.id, '2025-05-01T00:00:00Z', ['LEAK'], ['leak']) // outside default window
  const r = await get({})
  t.equal(r.status, 200)
  t.same(r.body.data, [
    {
      meter_id: m.id,
      meter_identifier: 'st-1',
      raw_flags: [],
      statuses: [],
      reported_at: '2025-06-14T09:00:00.000Z',
    },
    {
      meter_id: n.id,
      meter_identifier: 'st-2',
      raw_flags: ['BATT', 'XYZ'],
      statuses: ['low_battery', 'error'],
      reported_at: '2025-06-14T08:30:00.000Z',
    },
    {
      meter_id: m.id,
      meter_identifier: 'st-1',
      raw_flags: ['LEAK'],
      statuses: ['leak'],
      reported_at: '2025-06-14T08:00:00.000Z',
    },
  ])
  t.same(r.body.meta, { current_page: 1, per_page: 100, total: 3, last_page: 1 })
  const one = await get({ meter_id: n.id })
  t.equal(one.body.data.length, 1)
  const wide = await get({
    meter_id: m.id,
    from: '2025-05-01T00:00:00Z',
    to: '2025-06-15T00:00:00Z',
    per_page: 2,
    page: 2,
  })
  t.same(wide.body.meta, { current_page: 2, per_page: 2, total: 3, last_page: 2 })
  t.equal(wide.body.data[0].reported_at, '2025-05-01T00:00:00.000Z')
  t.same((await get({}, other.token)).body.data, [], 'other tenants see nothing')
})

t.test('bad parameters are 422 naming them; auth', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'st-3' })
  for (const [q, f] of [
    [{ meter_id: 'x' }, 'meter_id'],
    [{ meter_id: 9999999 }, 'meter_id'],
    [{ from: 'x' }, 'from'],
    [{ to: '2025-02-31' }, 'to'],
    [{ from: '2025-06-10', to: '2025-06-01' }, 'from'],
    [{ from: '2023-01-01', to: '2025-01-01' }, 'to'],
    [{ page: 0 }, 'page'],
    [{ per_page: 5000 }, 'per_page'],
  ] as [Record<string, string | number>, string][]) {
    const r = await get(q)
    t.equal(r.status, 422, JSON.stringify(q))
    t.ok(r.body.errors?.[f], `${JSON.stringify(q)} names ${f}`)
  }
  t.equal(
    (await get({ meter_id: m.id }, other.token)).status,
    422,
    "another workspace's meter is unknown",
  )
  t.equal((await s.call('GET', '/api/v1/statusReports')).status, 401)
  const user = await s.admin('POST', `/workspaces/${a.workspaceId}/users`, { email: 'q@x.io' })
  const tok = (
    await s.admin('POST', `/workspaces/${a.workspaceId}/tokens`, {
      user_id: user.data.id,
      scopes: ['data:report'],
    })
  ).data.token
  t.equal((await get({}, tok)).status, 403)
})
