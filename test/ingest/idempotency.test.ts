// (meter, kind, recorded_at) is stored once: replays are `duplicate` after a restart, far
// outside the actor's window, and the store has the final word.
import t from 'tap'
import { startTestServer, tmpDataDir } from '../helpers/server.js'

const dataDir = tmpDataDir()
let s = await startTestServer({}, { dataDir })
t.teardown(() => s.close())
const { token, workspaceId } = await s.tenant()
const base = Date.now() - 30 * 86400_000
const at = (min: number) => new Date(base + min * 60_000).toISOString()
const series = (meter: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    meter,
    kind: 'saldo',
    value: 1000 + from + i,
    unit: 'kwh',
    recorded_at: at((from + i) * 15),
  }))
const report = (readings: unknown[]) =>
  s.call('POST', '/api/v1/reportData', { token, body: { readings } })
const stored = async () =>
  Number((await s.app.parts.store.sql.query<any>('SELECT count() AS c FROM readings FINAL'))[0].c)
const storedRows = async () =>
  Number((await s.app.parts.store.sql.query<any>('SELECT count() AS c FROM readings'))[0].c)

t.test(
  'duplicates in one batch and across batches; 200 when every item is a duplicate',
  async (t) => {
    const item = { meter: 'd', kind: 'consumption', value: 1, unit: 'kwh', recorded_at: at(0) }
    const r1 = await report([item, item])
    t.equal(r1.status, 201)
    t.same(
      r1.body.results.map((x: any) => x.status),
      ['created', 'duplicate'],
    )
    t.same([r1.body.accepted, r1.body.duplicates, r1.body.rejected], [1, 1, 0])
    const r2 = await report([item])
    t.equal(r2.status, 200)
    t.same(r2.body, {
      accepted: 0,
      duplicates: 1,
      rejected: 0,
      results: [
        { meter: 'd', kind: 'consumption', recorded_at: item.recorded_at, status: 'duplicate' },
      ],
    })
  },
)

t.test('the same time with another kind is another reading', async (t) => {
  const r = await report([
    { meter: 'k', kind: 'consumption', value: 1, unit: 'kwh', recorded_at: at(0) },
    { meter: 'k', kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(0) },
  ])
  t.same(
    r.body.results.map((x: any) => x.status),
    ['created', 'created'],
  )
})

t.test('a replay far older than the actor window is found in ClickHouse', async (t) => {
  t.equal((await report(series('w', 300))).body.accepted, 300)
  const before = await storedRows()
  const r = await report([...series('w', 3), ...series('w', 2, 150)])
  t.same(
    r.body.results.map((x: any) => x.status),
    Array(5).fill('duplicate'),
  )
  t.equal(await storedRows(), before, 'no row written, not even a new version')
})

t.test('after a restart every replay is a duplicate and nothing is double counted', async (t) => {
  const total = await stored()
  await s.close()
  s = await startTestServer({}, { dataDir })
  const r = await s.call('POST', '/api/v1/reportData', {
    token,
    body: { readings: series('w', 300) },
  })
  t.equal(r.status, 200)
  t.equal(r.body.duplicates, 300)
  t.equal(await stored(), total)
  const fresh = await s.call('POST', '/api/v1/reportData', {
    token,
    body: { readings: series('w', 1, 300) },
  })
  t.equal(fresh.body.accepted, 1, 'the next new reading is created')
  const [sum] = await s.app.parts.store.sql.query<any>(
    `SELECT count() AS n, sum(canonical_value) AS s FROM readings FINAL WHERE workspace_id = ${workspaceId} AND kind = 'saldo'`,
  )
  t.equal(Number(sum.n), 301 + 1) // + the saldo of meter 'k'
})
