// Imports (NDJSON through the real ingest pipeline, import.completed, line-named failures)
// and the backfill-reading-quality job; plus a webhook delivery end to end.
import t from 'tap'
import { newMeter } from '../../src/store/meter-row.js'
import { ManualClock } from '../../src/clock.js'
import { chTime } from '../../src/store/sql.js'
import { startTestServer } from '../helpers/server.js'

const clock = new ManualClock(Date.parse('2025-03-10T12:00:00Z'))
const srv = await startTestServer({}, { clock })
t.teardown(() => srv.close())
const s = srv.app.parts
const events: { ws: number; event: string; data: any }[] = []
const emit = s.outbox.emit.bind(s.outbox)
s.outbox.emit = async (ws, event, data) => {
  events.push({ ws, event, data })
  return emit(ws, event, data)
}
const call = (method: string, path: string, opts: any = {}) =>
  srv.call(method, `/admin/v1${path}`, { token: srv.adminToken, ...opts })

async function waitImport(id: number) {
  for (let i = 0; i < 200; i++) {
    const r = (await srv.admin('GET', `/imports/${id}`)).data
    if (r.status !== 'running') return r
    await new Promise((ok) => setTimeout(ok, 25))
  }
  throw new Error('import did not finish')
}
/**
 * The import's `import.completed` events once there is one: the job saves its record before
 * it emits, so a poll can read the import finished a moment before the event is there.
 */
async function completedEvents() {
  for (let i = 0; i < 200; i++) {
    const ev = events.filter((e) => e.event === 'import.completed')
    if (ev.length) return ev
    await new Promise((ok) => setTimeout(ok, 25))
  }
  return []
}
const line = (meter: string, minute: number, value = 1) =>
  JSON.stringify({
    meter,
    kind: 'consumption',
    value,
    unit: 'kwh',
    recorded_at: new Date(Date.parse('2025-03-01T00:00:00Z') + minute * 60_000).toISOString(),
  })

t.test('import: NDJSON through the ingest path, then import.completed', async (t) => {
  const { workspaceId: ws } = await srv.tenant()
  events.length = 0
  const body =
    [line('imp-1', 0), line('imp-1', 15), '', line('imp-2', 0), line('imp-1', 0)].join('\n') + '\n'
  const r = await call('POST', `/workspaces/${ws}/imports`, {
    raw: body,
    headers: { 'content-type': 'application/x-ndjson' },
  })
  t.equal(r.status, 202)
  t.same(r.body.data, { id: r.body.data.id, status: 'running' })
  const done = await waitImport(r.body.data.id)
  t.match(done, { status: 'completed', accepted: 3, duplicates: 1, rejected: 0, error: null })
  const ev = await completedEvents()
  t.equal(ev.length, 1)
  t.same(ev[0]!.data, {
    import_id: done.id,
    status: 'completed',
    accepted: 3,
    duplicates: 1,
    rejected: 0,
  })
})

t.test('import: a bad line fails the import naming the line; nothing stored', async (t) => {
  const { workspaceId: ws } = await srv.tenant()
  events.length = 0
  let r = await call('POST', `/workspaces/${ws}/imports`, {
    raw: [line('b-1', 0), '{oops', line('b-1', 15)].join('\n'),
  })
  let done = await waitImport(r.body.data.id)
  t.equal(done.status, 'failed')
  t.match(done.error, /^line 2: not valid JSON/)
  t.match((await completedEvents())[0]?.data, {
    status: 'failed',
    accepted: 0,
  })
  r = await call('POST', `/workspaces/${ws}/imports`, { raw: [line('b-1', 0), '[1,2]'].join('\n') })
  done = await waitImport(r.body.data.id)
  t.match(done.error, /^line 2: must be one JSON object/)
  const stored = await s.store.sql.query<{ c: string }>(
    'SELECT count() AS c FROM readings WHERE workspace_id = {ws:UInt64}',
    { ws },
  )
  t.equal(Number(stored[0]!.c), 0)
  // A schema violation found by the pipeline names the line and the field.
  r = await call('POST', `/workspaces/${ws}/imports`, {
    raw: [
      line('b-2', 0),
      JSON.stringify({
        meter: 'b-2',
        kind: 'consumption',
        value: 'x',
        unit: 'kwh',
        recorded_at: '2025-03-01T00:00:00Z',
      }),
    ].join('\n'),
  })
  done = await waitImport(r.body.data.id)
  t.equal(done.status, 'failed')
  t.match(done.error, /line 2 \(value\)/)
  // Empty body, unknown workspace, unknown import.
  t.equal((await call('POST', `/workspaces/${ws}/imports`, { raw: '' })).status, 422)
  t.equal((await call('POST', `/workspaces/99999/imports`, { raw: line('x', 0) })).status, 404)
  t.equal((await call('GET', `/imports/99999`)).status, 404)
  r = await call('POST', `/workspaces/${ws}/imports`, { raw: '\n\n' })
  done = await waitImport(r.body.data.id)
  t.equal(done.status, 'failed')
  t.equal(
    (await srv.call('POST', `/admin/v1/workspaces/${ws}/imports`, { raw: line('x', 0) })).status,
    401,
  )
})

t.test(
  'webhook end to end: mapped items stored by the real pipeline; duplicates count as accepted',
  async (t) => {
    const { workspaceId: ws } = await srv.tenant()
    const ep = (
      await srv.admin('POST', `/workspaces/${ws}/webhook-endpoints`, {
        mapping: {
          items: 'uplinks',
          fields: {
            meter: 'dev_eui',
            kind: "'saldo'",
            value: 'decoded.volume_l',
            unit: "'l'",
            recorded_at: 'received_at',
          },
        },
      })
    ).data
    const body = {
      uplinks: [
        { dev_eui: 'lora-1', decoded: { volume_l: 1000 }, received_at: '2025-03-01T10:00:00Z' },
        { dev_eui: 'lora-1', decoded: { volume_l: 1100 }, received_at: '2025-03-01T11:00:00Z' },
        { dev_eui: 'lora-1', decoded: {}, received_at: '2025-03-01T12:00:00Z' },
      ],
    }
    const send = () =>
      srv.call('POST', ep.path, { body, headers: { authorization: `Bearer ${ep.token}` } })
    let r = await send()
    t.equal(r.status, 200)
    t.equal(r.body.accepted, 2)
    t.equal(r.body.rejected, 1)
    t.same(
      r.body.results.map((x: any) => x.status),
      ['created', 'created', 'rejected_unmappable'],
    )
    r = await send()
    t.same(
      r.body.results.map((x: any) => x.status),
      ['duplicate', 'duplicate', 'rejected_unmappable'],
    )
    t.equal(r.body.accepted, 2)
    await s.store.flush()
    const rows = await s.store.sql.query<{ c: string }>(
      'SELECT count() AS c FROM readings FINAL WHERE workspace_id = {ws:UInt64}',
      { ws },
    )
    t.equal(Number(rows[0]!.c), 2)
    // A mapped item violating the schema: 422, nothing stored.
    r = await srv.call('POST', ep.path, {
      body: {
        uplinks: [
          { dev_eui: 'lora-2', decoded: { volume_l: 1 }, received_at: '2025-03-01T10:00:00Z' },
          { dev_eui: 'lora-2', decoded: { volume_l: 'lots' }, received_at: '2025-03-01T11:00:00Z' },
        ],
      },
      headers: { authorization: `Bearer ${ep.token}` },
    })
    t.equal(r.status, 422)
    t.ok(
      Object.keys(r.body.errors).some((k) => k.startsWith('items.1')),
      JSON.stringify(r.body.errors),
    )
    await s.store.flush()
    const after = await s.store.sql.query<{ c: string }>(
      'SELECT count() AS c FROM readings FINAL WHERE workspace_id = {ws:UInt64}',
      { ws },
    )
    t.equal(Number(after[0]!.c), 2, 'nothing of the refused delivery was stored')
  },
)

t.test(
  'backfill: canonical values and flags recomputed; only changed rows rewritten',
  async (t) => {
    const { workspaceId: ws } = await srv.tenant()
    const created = await s.meters.create(
      ws,
      newMeter('bf-1', { unit: 'kwh', profile_needs_review: false }),
    )
    const m = (created as any).meter
    const base = Date.parse('2025-03-01T00:00:00Z')
    const put = (
      i: number,
      value: number,
      unit: string,
      canonical: number | null,
      flags: string[],
    ) =>
      s.store.sql.insert(
        'readings',
        JSON.stringify({
          workspace_id: ws,
          meter_id: m.id,
          kind: 'consumption',
          recorded_at: chTime(base + i * 3600_000),
          value,
          unit,
          canonical_value: canonical,
          canonical_unit: canonical === null ? null : 'kwh',
          quality_flags: flags,
          raw_payload: '{}',
          ingested_at: chTime(base),
          version: s.store.version(),
        }),
      )
    await put(0, 1500, 'wh', null, []) // not yet backfilled → 1.5 kwh
    await put(1, 2, 'kwh', 2, []) // already right
    await put(2, 5, 'm3', 5, []) // wrong family → null + unit_mismatch
    await put(3, -1, 'kwh', -1, []) // negative_consumption missing
    let r = await call('POST', '/jobs/backfill-reading-quality', { body: { meter_id: m.id } })
    t.equal(r.status, 200)
    t.same(r.body.data, { readings_rewritten: 3 })
    const rows = await s.store.sql.query<any>(
      'SELECT canonical_value, canonical_unit, quality_flags FROM readings FINAL WHERE workspace_id = {ws:UInt64} ORDER BY recorded_at',
      { ws },
    )
    t.same(
      rows.map((x) => [x.canonical_value, x.canonical_unit, x.quality_flags]),
      [
        [1.5, 'kwh', []],
        [2, 'kwh', []],
        [null, null, ['unit_mismatch']],
        [-1, 'kwh', ['negative_consumption']],
      ],
    )
    r = await call('POST', '/jobs/backfill-reading-quality', { body: { workspace_id: ws } })
    t.same(r.body.data, { readings_rewritten: 0 }, 'idempotent')
    r = await call('POST', '/jobs/backfill-reading-quality', { body: {} })
    t.equal(r.status, 200)
    const bad: [unknown, string][] = [
      [{ meter_id: 'x' }, 'meter_id'],
      [{ meter_id: 999999 }, 'meter_id'],
      [{ workspace_id: 999999 }, 'workspace_id'],
      [{ workspace_id: 0 }, 'workspace_id'],
      [{ bogus: 1 }, 'bogus'],
    ]
    for (const [b, key] of bad) {
      const x = await call('POST', '/jobs/backfill-reading-quality', { body: b })
      t.equal(x.status, 422, key)
      t.ok(x.body.errors?.[key], `${key} in ${JSON.stringify(x.body.errors)}`)
    }
    const other = await srv.tenant()
    const x = await call('POST', '/jobs/backfill-reading-quality', {
      body: { workspace_id: other.workspaceId, meter_id: m.id },
    })
    t.equal(x.status, 422)
    t.ok(x.body.errors.meter_id)
  },
)
