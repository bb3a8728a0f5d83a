import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())

t.test('healthz answers without auth', async (t) => {
  const r = await s.call('GET', '/healthz')
  t.equal(r.status, 200)
  t.same(r.body, { status: 'ok' })
})

t.test('unknown route is a JSON 404, wrong method a JSON 405', async (t) => {
  const nf = await s.call('GET', '/api/v1/nothing-here')
  t.equal(nf.status, 404)
  t.match(nf.body, { message: String })
  t.match(nf.headers['content-type'], /application\/json/)
  const na = await s.call('DELETE', '/healthz')
  t.equal(na.status, 405)
  t.match(na.body.message, /not allowed/)
  t.match(na.headers.allow, /GET/)
})

t.test('invalid JSON is 422 {message, errors}', async (t) => {
  const r = await s.call('POST', '/admin/v1/workspaces', { token: s.adminToken, raw: '{"name":' })
  t.equal(r.status, 422)
  t.ok(r.body.message)
  t.ok(r.body.errors.body)
})

t.test('admin API needs the admin token', async (t) => {
  const none = await s.call('GET', '/admin/v1/workspaces')
  t.equal(none.status, 401)
  t.same(Object.keys(none.body), ['message'])
  const wrong = await s.call('GET', '/admin/v1/workspaces', { token: 'nope' })
  t.equal(wrong.status, 401)
})

t.test('admin validation names the field', async (t) => {
  const r = await s.call('POST', '/admin/v1/workspaces', {
    token: s.adminToken,
    body: { name: '', provision_cap_per_hour: -1 },
  })
  t.equal(r.status, 422)
  t.ok(r.body.errors.name)
  t.ok(r.body.errors.provision_cap_per_hour)
  const u = await s.call('POST', '/admin/v1/workspaces/999/users', {
    token: s.adminToken,
    body: { email: 'a@b.c' },
  })
  t.equal(u.status, 404)
})
