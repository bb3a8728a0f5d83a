// Own file: chDB allows one data directory per process, and this needs a server with a
// small body limit.
import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer({ MAX_BODY_BYTES: '1024' })
t.teardown(() => s.close())

t.test('a body over the size limit is 413, with or without Content-Length', async (t) => {
  const body = JSON.stringify({ name: 'x'.repeat(5000) })
  const r = await s.call('POST', '/admin/v1/workspaces', { token: s.adminToken, raw: body })
  t.equal(r.status, 413)
  t.match(r.body.message, /exceeds 1024 bytes/)
  const ok = await s.call('POST', '/admin/v1/workspaces', {
    token: s.adminToken,
    body: { name: 'small' },
  })
  t.equal(ok.status, 201)
})
