// Our own limit on /reportData: at most MAX_BATCH_ITEMS readings per batch (default 10,000);
// beyond it the whole batch is a 422 whose errors name `readings`, and nothing is stored.
import t from 'tap'
import { startTestServer, type TestServer } from '../helpers/server.js'

let s: TestServer = await startTestServer()
t.teardown(() => s.close())

const reading = (i: number) => ({
  meter: `batch-${i % 5}`,
  kind: 'saldo',
  value: i,
  unit: 'kwh',
  recorded_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
})

if (!s.app.router.list().some((r) => r.method === 'POST' && r.pattern === '/api/v1/reportData')) {
  t.comment('POST /api/v1/reportData not registered yet: batch limit tests SKIPPED')
  t.pass('skipped', { skip: 'no /reportData yet' })
} else {
  t.test('default: 10,001 readings are a 422 naming readings; nothing stored', async (t) => {
    t.equal(s.app.parts.config.MAX_BATCH_ITEMS, 10_000)
    const { token } = await s.tenant()
    const readings = Array.from({ length: 10_001 }, (_, i) => reading(i))
    const r = await s.call('POST', '/api/v1/reportData', { token, body: { readings } })
    t.equal(r.status, 422)
    t.ok(r.body.message)
    t.ok(r.body.errors.readings, 'errors keyed `readings`')
    t.match(r.body.errors.readings[0], /10000/)
    const [c] = await s.app.parts.store.sql.query<{ n: string }>(
      'SELECT count() AS n FROM readings',
    )
    t.equal(Number(c!.n), 0, 'nothing of the batch was stored')
  })

  t.test('MAX_BATCH_ITEMS is configurable; at the limit the batch is accepted', async (t) => {
    const dataDir = s.dataDir
    await s.close()
    s = await startTestServer({ MAX_BATCH_ITEMS: '3' }, { dataDir })
    const { token } = await s.tenant()
    const over = await s.call('POST', '/api/v1/reportData', {
      token,
      body: { readings: [0, 1, 2, 3].map(reading) },
    })
    t.equal(over.status, 422)
    t.ok(over.body.errors.readings)
    const at = await s.call('POST', '/api/v1/reportData', {
      token,
      body: { readings: [0, 1, 2].map(reading) },
    })
    t.ok(at.status === 200 || at.status === 201, `3 of 3 accepted (${at.status})`)
    t.equal(at.body.accepted, 3)
  })
}
