// GET /metrics is never public: with METRICS_TOKEN set only that bearer token scrapes it;
// unset (the default), only the admin token does. Embedded and cluster mode alike.
import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const METRICS_TOKEN = 'scrape-token-0123456789'

t.test('default: the admin token scrapes, nothing else does', async (t) => {
  const s = await startTestServer()
  t.teardown(() => s.close())
  t.equal((await s.call('GET', '/metrics')).status, 401, 'no token: 401')
  const { token } = await s.tenant()
  t.equal((await s.call('GET', '/metrics', { token })).status, 401, 'an API token: 401')
  const ok = await s.call('GET', '/metrics', { token: s.adminToken })
  t.equal(ok.status, 200)
  t.match(ok.text, /meterflow_readings_total|meterflow_actors/)
})

t.test('METRICS_TOKEN: that token scrapes; no token or another one is 401', async (t) => {
  const s = await startTestServer({ METRICS_TOKEN })
  t.teardown(() => s.close())
  const none = await s.call('GET', '/metrics')
  t.equal(none.status, 401)
  t.notMatch(none.text, /meterflow_/, 'no metric leaks in the refusal')
  t.equal((await s.call('GET', '/metrics', { token: 'wrong-token-0123456789' })).status, 401)
  const ok = await s.call('GET', '/metrics', { token: METRICS_TOKEN })
  t.equal(ok.status, 200)
  t.match(ok.headers['content-type'], /text\/plain/)
})
