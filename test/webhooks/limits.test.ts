// One webhook endpoint cannot stall every tenant: the item cap is checked before any field
// is mapped, the whole delivery's mapping has an evaluation budget, and mapping yields to
// the event loop while it runs. Refusals are 422s naming the field; nothing is stored.
import t from 'tap'
import { compileMapping } from '../../src/webhooks/mapping.js'
import { mapDelivery } from '../../src/webhooks/map-delivery.js'
import { startTestServer } from '../helpers/server.js'

const srv = await startTestServer({ MAX_BATCH_ITEMS: '200', WEBHOOK_MAPPING_BUDGET_MS: '50' })
t.teardown(() => srv.close())
const { workspaceId: ws, token } = await srv.tenant()

async function endpoint(mapping: unknown) {
  return (await srv.admin('POST', `/workspaces/${ws}/webhook-endpoints`, { mapping })).data as {
    path: string
    token: string
  }
}
const readings = async () =>
  (await srv.call('GET', '/api/v1/readings?limit=1000', { token })).body?.data ?? []

const item = (i: number) => ({ id: `m${i}`, v: i, at: '2025-01-01T00:00:00Z' })

t.test('over the item cap: 422 naming items, before any field expression runs', async (t) => {
  // A value expression that fails on every item: had the items been mapped first, the
  // answer would name mapping.fields.value.
  const ep = await endpoint({
    fields: {
      meter: 'id',
      kind: '"saldo"',
      value: '$error("mapped")',
      unit: '"kwh"',
      recorded_at: 'at',
    },
  })
  const r = await srv.call('POST', ep.path, {
    token: ep.token,
    body: Array.from({ length: 201 }, (_, i) => item(i)),
  })
  t.equal(r.status, 422)
  t.ok(r.body.errors?.items, 'names items')
  t.notOk(r.body.errors?.['mapping.fields.value'], 'no field was mapped')
  t.match(r.body.errors.items[0], /201 items; at most 200/)
  const atCap = await srv.call('POST', ep.path, {
    token: ep.token,
    body: Array.from({ length: 200 }, (_, i) => item(i)),
  })
  t.ok(atCap.body.errors?.['mapping.fields.value'], 'at the cap the items are mapped')
})

t.test('over the delivery budget: 422 naming mapping, nothing stored', async (t) => {
  // Each item takes about a millisecond to map (far under the 1 s per-expression limit);
  // 200 of them take far longer than the 50 ms the whole delivery may use.
  const ep = await endpoint({
    fields: {
      meter: 'id',
      kind: '"saldo"',
      value: 'v + $count([1..200][$ % 7 = 0]) * 0',
      unit: '"kwh"',
      recorded_at: 'at',
    },
  })
  const r = await srv.call('POST', ep.path, {
    token: ep.token,
    body: Array.from({ length: 200 }, (_, i) => item(i)),
  })
  t.equal(r.status, 422)
  t.ok(r.body.errors?.mapping, `names mapping: ${r.text}`)
  t.match(r.body.message, /took more than 50 ms/)
  t.same(await readings(), [], 'nothing stored')
  // The budget is wall time: on a loaded machine a stall of the process (GC, another
  // test's burst, the CI's ClickHouse server merging) can take one small delivery over it
  // too, several times in a row. So it gets ten tries spread over about two seconds; a
  // budget that counted per endpoint rather than per delivery would fail all ten.
  let small = await srv.call('POST', ep.path, { token: ep.token, body: [item(1)] })
  for (let i = 0; i < 9 && small.status === 422; i++) {
    await new Promise((r) => setTimeout(r, 200))
    small = await srv.call('POST', ep.path, { token: ep.token, body: [item(1)] })
  }
  t.equal(small.status, 200, `a small delivery of the same mapping is accepted: ${small.text}`)
  t.equal(small.body.accepted, 1)
})

t.test('mapping yields to the event loop while it runs', async (t) => {
  const m = compileMapping({
    fields: { meter: 'id', kind: '"saldo"', value: 'v', unit: '"kwh"', recorded_at: 'at' },
  })
  const body = Array.from({ length: 20_000 }, (_, i) => item(i))
  let turns = 0
  const tick = () => {
    turns++
    if (!done) setImmediate(tick)
  }
  let done = false
  setImmediate(tick)
  const out = await mapDelivery(m, body, { maxItems: 20_000, budgetMs: 60_000 })
  done = true
  t.equal(out.length, 20_000)
  t.same(out[7], { meter: 'm7', kind: 'saldo', value: 7, unit: 'kwh', recorded_at: item(7).at })
  t.ok(turns > 0, `other work ran ${turns} times while the delivery was mapped`)
})
