// reading.rejected once per delivery and the `message` of a wholly refused webhook delivery
// (issue 14, items 9 and 10), through the real ingest pipeline and a real import.
import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const srv = await startTestServer()
t.teardown(() => srv.close())
const s = srv.app.parts
const events: { ws: number; event: string; data: any }[] = []
const emit = s.outbox.emit.bind(s.outbox)
s.outbox.emit = async (ws, event, data) => {
  events.push({ ws, event, data })
  return emit(ws, event, data)
}
const rejectedEvents = () => events.filter((e) => e.event === 'reading.rejected')
const { workspaceId: ws, token } = await srv.tenant()
const at = (min: number) => new Date(Date.now() - 3600_000 + min * 60_000).toISOString()

const ep = (
  await srv.admin('POST', `/workspaces/${ws}/webhook-endpoints`, {
    mapping: {
      items: 'uplinks',
      fields: {
        meter: 'dev',
        kind: "'saldo'",
        value: 'v',
        unit: "'kwh'",
        recorded_at: 'at',
      },
    },
  })
).data as { path: string; token: string }
const send = (body: unknown) => srv.call('POST', ep.path, { token: ep.token, body })

t.test('item 9: unmappable items emit reading.rejected, once per delivery', async (t) => {
  // A retired meter gives a pipeline rejection next to the unmappable ones.
  const m = await srv.call('POST', '/api/v1/meters', { token, body: { meter_identifier: 'old' } })
  await srv.admin('PUT', `/meters/${m.body.data.id}/lifecycle`, { state: 'removed' })
  events.length = 0
  const r = await send({
    uplinks: [
      { dev: 'w-1', v: 1, at: at(0) },
      { dev: 'w-2', at: at(0) },
      { v: 3, at: at(0) },
      { dev: 'old', v: 4, at: at(0) },
    ],
  })
  t.equal(r.status, 200, r.text)
  t.match(r.body, { accepted: 1, rejected: 3 })
  t.notOk('message' in r.body, 'part of the delivery was accepted: no message')
  const ev = rejectedEvents()
  t.equal(ev.length, 1, 'one event for the delivery')
  t.same(ev[0]!.data, {
    source: 'webhook',
    counts: { rejected_unmappable: 2, rejected_meter_retired: 1 },
    total: 3,
    meters: ['w-2', 'old'],
  })
})

t.test('item 9: a delivery with only unmappable items emits too', async (t) => {
  events.length = 0
  const r = await send({ uplinks: [{ dev: 'w-3', at: at(1) }] })
  t.equal(r.status, 200, r.text)
  t.equal(rejectedEvents().length, 1)
  t.same(rejectedEvents()[0]!.data.counts, { rejected_unmappable: 1 })
})

t.test(
  'item 10: a wholly refused delivery carries a message naming what did not fit',
  async (t) => {
    const r = await send({
      uplinks: [
        { dev: 'w-4', at: at(2) },
        { v: 2, at: at(2) },
      ],
    })
    t.equal(r.status, 200, r.text)
    t.match(r.body, { accepted: 0, rejected: 2 })
    t.type(r.body.message, 'string')
    t.match(r.body.message, /2 rejected_unmappable/)
    t.match(r.body.message, /items\.0: value/)
    t.match(r.body.message, /items\.1: meter/)
    const none = await send({ uplinks: [] })
    t.equal(none.status, 200, none.text)
    t.match(none.body, { accepted: 0, rejected: 0, results: [] })
    t.type(none.body.message, 'string', 'a delivery with no reading is refused as a whole')
    const ok = await send({ uplinks: [{ dev: 'w-5', v: 5, at: at(3) }] })
    t.notOk('message' in ok.body)
  },
)

t.test('item 9: an import emits reading.rejected once, not once per chunk', async (t) => {
  const m = await srv.call('POST', '/api/v1/meters', { token, body: { meter_identifier: 'gone' } })
  await srv.admin('PUT', `/meters/${m.body.data.id}/lifecycle`, { state: 'removed' })
  events.length = 0
  const lines = Array.from({ length: 2500 }, (_, i) =>
    JSON.stringify({
      meter: i % 1000 === 0 ? 'gone' : `imp-${i % 7}`,
      kind: 'consumption',
      value: 1,
      unit: 'kwh',
      recorded_at: new Date(Date.parse('2025-01-01T00:00:00Z') + i * 60_000).toISOString(),
    }),
  )
  const r = await srv.call('POST', `/admin/v1/workspaces/${ws}/imports`, {
    token: srv.adminToken,
    raw: lines.join('\n'),
    headers: { 'content-type': 'application/x-ndjson' },
  })
  t.equal(r.status, 202, r.text)
  let done: any
  for (let i = 0; i < 400; i++) {
    done = (await srv.admin('GET', `/imports/${r.body.data.id}`)).data
    if (done.status !== 'running') break
    await new Promise((ok) => setTimeout(ok, 25))
  }
  t.match(done, { status: 'completed', rejected: 3 })
  const ev = rejectedEvents()
  t.equal(ev.length, 1, 'one event for three chunks')
  t.same(ev[0]!.data, {
    source: 'import',
    counts: { rejected_meter_retired: 3 },
    total: 3,
    meters: ['gone'],
  })
})
