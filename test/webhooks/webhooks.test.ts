// Webhook ingest: endpoints, tokens, mapping (items, $$, undefined fields), unmappable items,
// 401/422/429 paths. The pipeline is replaced by a recording fake so these tests pin the
// webhook layer alone; test/webhooks/e2e.test.ts runs the real pipeline.
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { validationError } from '../../src/errors.js'
import type { Ingest, IngestRequest } from '../../src/ingest/types.js'
import { startTestServer } from '../helpers/server.js'

const clock = new ManualClock(Date.parse('2025-03-01T12:00:00Z'))
const calls: IngestRequest[] = []
let failWith: Error | null = null
const recordingIngest: Ingest = {
  async ingest(req) {
    calls.push(req)
    if (failWith) throw failWith
    return {
      accepted: req.items.length,
      duplicates: 0,
      rejected: 0,
      results: req.items.map((it: any) => ({
        meter: it.meter,
        kind: it.kind,
        recorded_at: it.recorded_at,
        status:
          it.meter === 'dup'
            ? 'duplicate'
            : it.meter === 'old'
              ? 'rejected_meter_retired'
              : 'created',
        ...(it.meter === 'old' ? { reason: 'removed' } : {}),
      })),
    }
  },
}
const srv = await startTestServer({}, { clock, wrapIngest: () => recordingIngest })
t.teardown(() => srv.close())
const { workspaceId: ws } = await srv.tenant()

const MAPPING = {
  items: 'uplinks',
  fields: {
    meter: 'dev_eui',
    kind: "'saldo'",
    value: 'decoded.volume_l',
    unit: "'l'",
    recorded_at: 'received_at',
    profile: 'profile',
  },
}

async function endpoint(mapping: unknown = MAPPING, extra: Record<string, unknown> = {}) {
  const r = await srv.admin('POST', `/workspaces/${ws}/webhook-endpoints`, { mapping, ...extra })
  return r.data as { id: string; token: string; path: string; enabled: boolean; mapping: unknown }
}
const send = (
  path: string,
  token: string | null,
  body: unknown,
  headers: Record<string, string> = {},
) =>
  srv.call('POST', path, {
    ...(typeof body === 'string' ? { raw: body } : { body }),
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  })

t.test('admin create: random id, token once, path; GET never shows the token', async (t) => {
  const a = await endpoint()
  const b = await endpoint()
  t.ok(a.id.length >= 16)
  t.not(a.id, b.id)
  t.match(a.token, /^mfwh_/)
  t.equal(a.path, `/api/v1/webhooks/${a.id}`)
  t.equal(a.enabled, true)
  t.same(a.mapping, MAPPING)
  const got = await srv.admin('GET', `/webhook-endpoints/${a.id}`)
  t.notOk('token' in got.data)
  t.notOk(JSON.stringify(got).includes(a.token))
})

t.test('admin create: bad mappings are 422 naming the field', async (t) => {
  const cases: [unknown, string][] = [
    [undefined, 'mapping'],
    [{ fields: { recorded_at: 'a', value: 'foo(' } }, 'mapping.fields.value'],
    [{ items: '[[', fields: { recorded_at: 'a' } }, 'mapping.items'],
    [{ fields: { meter: 'a' } }, 'mapping.fields.recorded_at'],
    [{ fields: { recorded_at: 'a', colour: 'b' } }, 'mapping.fields.colour'],
    [{ fields: { recorded_at: 12 } }, 'mapping.fields.recorded_at'],
    [{ fields: { recorded_at: 'a' }, extra: 1 }, 'mapping.extra'],
    ['x', 'mapping'],
  ]
  for (const [mapping, key] of cases) {
    const r = await srv.call('POST', `/admin/v1/workspaces/${ws}/webhook-endpoints`, {
      token: srv.adminToken,
      body: mapping === undefined ? {} : { mapping },
    })
    t.equal(r.status, 422, key)
    t.ok(r.body.errors[key], `${key} in ${JSON.stringify(r.body.errors)}`)
  }
  const r = await srv.call('POST', `/admin/v1/workspaces/${ws}/webhook-endpoints`, {
    token: srv.adminToken,
    body: { mapping: MAPPING, enabled: 'yes' },
  })
  t.equal(r.status, 422)
  t.ok(r.body.errors.enabled)
  const nows = await srv.call('POST', `/admin/v1/workspaces/999999/webhook-endpoints`, {
    token: srv.adminToken,
    body: { mapping: MAPPING },
  })
  t.equal(nows.status, 404)
})

t.test('mapping: items expression, fields per item, delivery order, X-Webhook-Token', async (t) => {
  const ep = await endpoint()
  calls.length = 0
  const body = {
    uplinks: [
      { dev_eui: 'm1', decoded: { volume_l: 10 }, received_at: '2025-03-01T10:00:00Z' },
      {
        dev_eui: 'm2',
        decoded: { volume_l: 20 },
        received_at: '2025-03-01T10:05:00Z',
        profile: 'generic',
      },
    ],
  }
  const r = await send(ep.path, null, body, { 'x-webhook-token': ep.token })
  t.equal(r.status, 200)
  t.equal(calls.length, 1)
  t.equal(calls[0]!.source, 'webhook')
  t.equal(calls[0]!.workspaceId, ws)
  t.same(calls[0]!.items, [
    { meter: 'm1', kind: 'saldo', value: 10, unit: 'l', recorded_at: '2025-03-01T10:00:00Z' },
    {
      meter: 'm2',
      kind: 'saldo',
      value: 20,
      unit: 'l',
      recorded_at: '2025-03-01T10:05:00Z',
      profile: 'generic',
    },
  ])
  t.same(r.body, {
    accepted: 2,
    rejected: 0,
    results: [
      {
        index: 0,
        status: 'created',
        meter: 'm1',
        kind: 'saldo',
        recorded_at: '2025-03-01T10:00:00Z',
      },
      {
        index: 1,
        status: 'created',
        meter: 'm2',
        kind: 'saldo',
        recorded_at: '2025-03-01T10:05:00Z',
      },
    ],
  })
})

t.test(
  'mapping: without items an array body is the list and an object body one item; $$ is the body',
  async (t) => {
    const ep = await endpoint({
      fields: {
        meter: '$$.gateway & "-" & id',
        kind: "'consumption'",
        value: 'v',
        unit: '$$.unit',
        recorded_at: 'ts',
      },
    })
    calls.length = 0
    // Object body: one item; $$ is the body itself.
    let r = await send(ep.path, ep.token, {
      gateway: 'g',
      id: 'a',
      v: 1,
      unit: 'kwh',
      ts: '2025-03-01T10:00:00Z',
    })
    t.equal(r.status, 200)
    t.same(calls[0]!.items, [
      {
        meter: 'g-a',
        kind: 'consumption',
        value: 1,
        unit: 'kwh',
        recorded_at: '2025-03-01T10:00:00Z',
      },
    ])
    // Array body: each element an item; $$ is the whole array.
    const ep2 = await endpoint({
      fields: {
        meter: 'id',
        kind: "'consumption'",
        value: '$count($$)',
        unit: "'kwh'",
        recorded_at: 'ts',
      },
    })
    r = await send(ep2.path, ep2.token, [
      { id: 'a', ts: '2025-03-01T10:00:00Z' },
      { id: 'b', ts: '2025-03-01T10:00:00Z' },
    ])
    t.equal(r.status, 200)
    t.same(
      calls[1]!.items.map((i: any) => [i.meter, i.value]),
      [
        ['a', 2],
        ['b', 2],
      ],
    )
    // items as one object.
    const ep3 = await endpoint({
      items: 'reading',
      fields: { meter: '$$.device', kind: "'saldo'", value: 'v', unit: "'m3'", recorded_at: 'at' },
    })
    r = await send(ep3.path, ep3.token, {
      device: 'd1',
      reading: { v: 5, at: '2025-03-01T10:00:00Z' },
    })
    t.equal(r.status, 200)
    t.same(calls[2]!.items, [
      { meter: 'd1', kind: 'saldo', value: 5, unit: 'm3', recorded_at: '2025-03-01T10:00:00Z' },
    ])
  },
)

t.test('undefined leaves a field out; payload shape B passes through', async (t) => {
  const ep = await endpoint({
    items: 'rows',
    fields: { meter: 'm', profile: 'p', payload: 'payload', unit: 'u', recorded_at: 't' },
  })
  calls.length = 0
  const r = await send(ep.path, ep.token, {
    rows: [
      {
        m: 'x',
        p: 'acme',
        payload: { value: 3, status: ['LEAK'] },
        t: '2025-03-01T10:00:00+01:00',
      },
    ],
  })
  t.equal(r.status, 200)
  t.same(calls[0]!.items, [
    {
      meter: 'x',
      profile: 'acme',
      payload: { value: 3, status: ['LEAK'] },
      recorded_at: '2025-03-01T10:00:00+01:00',
    },
  ])
  t.notOk('unit' in (calls[0]!.items[0] as object))
})

t.test('unmappable items: reason names the field; others still ingested in order', async (t) => {
  const ep = await endpoint()
  calls.length = 0
  const r = await send(ep.path, ep.token, {
    uplinks: [
      { dev_eui: 'a', decoded: { volume_l: 1 }, received_at: '2025-03-01T10:00:00Z' },
      { decoded: { volume_l: 2 }, received_at: '2025-03-01T10:00:00Z' },
      { dev_eui: 'c', decoded: { volume_l: 3 }, received_at: 'yesterday' },
      { dev_eui: 'd', decoded: {}, received_at: '2025-03-01T10:00:00Z' },
      { dev_eui: 'e', decoded: { volume_l: 5 } },
      { dev_eui: 'dup', decoded: { volume_l: 6 }, received_at: '2025-03-01T10:00:00Z' },
      { dev_eui: 'old', decoded: { volume_l: 7 }, received_at: '2025-03-01T10:00:00Z' },
      { dev_eui: 'f', decoded: { volume_l: 8 }, received_at: 1740823200 },
    ],
  })
  t.equal(r.status, 200)
  t.same(
    calls[0]!.items.map((i: any) => i.meter),
    ['a', 'dup', 'old'],
  )
  const res = r.body.results
  t.same(
    res.map((x: any) => x.index),
    [0, 1, 2, 3, 4, 5, 6, 7],
  )
  t.same(
    res.map((x: any) => x.status),
    [
      'created',
      'rejected_unmappable',
      'rejected_unmappable',
      'rejected_unmappable',
      'rejected_unmappable',
      'duplicate',
      'rejected_meter_retired',
      'rejected_unmappable',
    ],
  )
  t.match(res[1].reason, /^meter/)
  t.match(res[2].reason, /^recorded_at.*ISO 8601/)
  t.match(res[3].reason, /^value/)
  t.match(res[4].reason, /^recorded_at/)
  t.match(res[7].reason, /^recorded_at/)
  t.equal(res[6].reason, 'removed')
  t.equal(res[2].meter, 'c')
  t.equal(r.body.accepted, 2, 'created + duplicates')
  t.equal(r.body.rejected, 6)

  calls.length = 0
  const all = await send(ep.path, ep.token, { uplinks: [{ dev_eui: 'x' }] })
  t.equal(all.status, 200)
  t.equal(calls.length, 0, 'nothing to ingest: the pipeline is not called')
  t.same(all.body.accepted, 0)
  t.same(all.body.rejected, 1)
})

t.test(
  '422 for the delivery: not JSON, failing expression, items not array/object; pipeline 422 re-keyed',
  async (t) => {
    const ep = await endpoint()
    let r = await send(ep.path, ep.token, '{not json')
    t.equal(r.status, 422)
    t.ok(r.body.errors.body)
    r = await send(ep.path, ep.token, { uplinks: 'text' })
    t.equal(r.status, 422)
    t.ok(r.body.errors['mapping.items'])
    const plain = await endpoint({ fields: { meter: 'a', recorded_at: 'b' } })
    r = await send(plain.path, plain.token, 42)
    t.equal(r.status, 422)
    t.ok(r.body.errors.body)
    const bad = await endpoint({
      fields: { meter: 'a', value: '$number(v) + 1', recorded_at: 'b' },
    })
    r = await send(bad.path, bad.token, { a: 'm', v: 'abc', b: '2025-03-01T10:00:00Z' })
    t.equal(r.status, 422)
    t.ok(r.body.errors['mapping.fields.value'])
    const badItems = await endpoint({ items: '$foo()', fields: { recorded_at: 'b' } })
    r = await send(badItems.path, badItems.token, {})
    t.equal(r.status, 422)
    t.ok(r.body.errors['mapping.items'])
    // Runaway recursion is cut off, not a hang or a 500.
    const loop = await endpoint({
      fields: { meter: '($f := function($n) { $f($n + 1) }; $f(0))', recorded_at: 'b' },
    })
    r = await send(loop.path, loop.token, { b: '2025-03-01T10:00:00Z' })
    t.equal(r.status, 422)
    t.ok(r.body.errors['mapping.fields.meter'])

    // A profile violation found by the pipeline: its 422, keyed by the delivery's item index.
    failWith = validationError({ 'items.0.value': ['The value field is invalid.'] })
    r = await send(ep.path, ep.token, {
      uplinks: [
        { decoded: { volume_l: 1 }, received_at: '2025-03-01T10:00:00Z' },
        { dev_eui: 'b', decoded: { volume_l: 'x' }, received_at: '2025-03-01T10:00:00Z' },
      ],
    })
    failWith = null
    t.equal(r.status, 422)
    t.same(Object.keys(r.body.errors), ['items.1.value'])
  },
)

t.test(
  '401: unknown endpoint, wrong token, disabled endpoint, missing token, query token — identical bodies',
  async (t) => {
    const ep = await endpoint()
    const body = { uplinks: [] }
    const answers = [
      await send('/api/v1/webhooks/doesnotexist000000', ep.token, body),
      await send(ep.path, 'mfwh_wrong', body),
      await send(ep.path, null, body),
      await send(`${ep.path}?token=${ep.token}`, null, body),
    ]
    await srv.admin('PATCH', `/webhook-endpoints/${ep.id}`, { enabled: false })
    answers.push(await send(ep.path, ep.token, body))
    for (const a of answers) {
      t.equal(a.status, 401)
      t.equal(a.text, answers[0]!.text)
    }
    await srv.admin('PATCH', `/webhook-endpoints/${ep.id}`, { enabled: true })
    t.equal((await send(ep.path, ep.token, body)).status, 200)
    // An API token is not a webhook token.
    const tenant = await srv.tenant()
    t.equal((await send(ep.path, tenant.token, body)).status, 401)
  },
)

t.test('rotate-token: the old token stops at once; PATCH mapping recompiles', async (t) => {
  const ep = await endpoint()
  const rot = await srv.admin('POST', `/webhook-endpoints/${ep.id}/rotate-token`)
  t.match(rot.data.token, /^mfwh_/)
  t.equal((await send(ep.path, ep.token, { uplinks: [] })).status, 401)
  t.equal((await send(ep.path, rot.data.token, { uplinks: [] })).status, 200)

  calls.length = 0
  const patched = await srv.admin('PATCH', `/webhook-endpoints/${ep.id}`, {
    mapping: {
      fields: { meter: "'fixed'", kind: "'saldo'", value: '1', unit: "'kwh'", recorded_at: 'at' },
    },
  })
  t.equal(patched.data.enabled, true)
  const r = await send(ep.path, rot.data.token, { at: '2025-03-01T10:00:00Z' })
  t.equal(r.status, 200)
  t.equal((calls[0]!.items[0] as any).meter, 'fixed')

  const bad = await srv.call('PATCH', `/admin/v1/webhook-endpoints/${ep.id}`, {
    token: srv.adminToken,
    body: { mapping: { fields: { recorded_at: '))' } } },
  })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors['mapping.fields.recorded_at'])
  const nf = await srv.call('PATCH', `/admin/v1/webhook-endpoints/nope`, {
    token: srv.adminToken,
    body: {},
  })
  t.equal(nf.status, 404)
  const nf2 = await srv.call('POST', `/admin/v1/webhook-endpoints/nope/rotate-token`, {
    token: srv.adminToken,
  })
  t.equal(nf2.status, 404)
  const unauth = await srv.call('PATCH', `/admin/v1/webhook-endpoints/${ep.id}`, { body: {} })
  t.equal(unauth.status, 401)
})

t.test('per-IP rate limit: 120 per minute, then 429; the window resets', async (t) => {
  clock.advance(60_000)
  const ep = await endpoint()
  let last = 0
  for (let i = 0; i < 120; i++) last = (await send(ep.path, 'wrong', {})).status
  t.equal(last, 401)
  const r = await send(ep.path, ep.token, {})
  t.equal(r.status, 429)
  t.ok(r.body.message)
  clock.advance(60_000)
  t.equal((await send(ep.path, ep.token, { uplinks: [] })).status, 200)
})
