import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const { token } = await s.tenant()

t.test('a generic batch is stored and a replay is all duplicates', async (t) => {
  const now = Date.now()
  const readings = Array.from({ length: 5 }, (_, i) => ({
    meter: `m-${i % 2}`,
    kind: 'saldo',
    value: 100 + i,
    unit: 'kwh',
    recorded_at: new Date(now - 3600_000 + i * 60_000).toISOString(),
  }))
  const r1 = await s.call('POST', '/api/v1/reportData', { token, body: { readings } })
  t.equal(r1.status, 201, r1.text)
  t.equal(r1.body.accepted, 5)
  const r2 = await s.call('POST', '/api/v1/reportData', { token, body: { readings } })
  t.equal(r2.status, 200, r2.text)
  t.equal(r2.body.duplicates, 5)
  const rows = await s.app.parts.store.sql.query('SELECT count() c FROM readings FINAL')
  t.equal(Number((rows[0] as any).c), 5)
})
