// Restarting on the same DATA_DIR keeps workspaces, users and tokens (a revoked token stays
// revoked), id sequences continue above what is stored, and the generated admin token lives
// in DATA_DIR/admin-token (mode 0600) and survives restarts; ADMIN_TOKEN overrides it.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { startTestServer, type TestServer } from '../helpers/server.js'

let s: TestServer = await startTestServer()
const dataDir = s.dataDir
t.teardown(() => s.close())
const restart = async (env: Record<string, string> = {}) => {
  await s.close()
  s = await startTestServer(env, { dataDir })
}

t.test(
  'ADMIN_TOKEN unset: a token is generated into DATA_DIR/admin-token with mode 0600',
  async (t) => {
    const file = path.join(dataDir, 'admin-token')
    const st = fs.statSync(file)
    t.equal(st.mode & 0o777, 0o600, 'only the owner may read it')
    const onDisk = fs.readFileSync(file, 'utf8').trim()
    t.equal(onDisk, s.adminToken, 'the file holds the admin token in force')
    t.ok(onDisk.length >= 32, 'long enough to be unguessable')
    t.equal((await s.call('GET', '/admin/v1/workspaces', { token: onDisk })).status, 200)
  },
)

t.test('a restart keeps workspaces, users and tokens; revoked stays revoked', async (t) => {
  const tenant = await s.tenant({ workspace: { name: 'persisted', retention_days: 30 } })
  const user2 = await s.admin('POST', `/workspaces/${tenant.workspaceId}/users`, {
    email: 'second@example.com',
    permissions: [],
  })
  const revoked = await s.admin('POST', `/workspaces/${tenant.workspaceId}/tokens`, {
    user_id: user2.data.id,
    scopes: ['data:read'],
  })
  await s.admin('DELETE', `/tokens/${revoked.data.id}`)
  await s.admin('PATCH', `/workspaces/${tenant.workspaceId}`, { name: 'persisted and renamed' })
  const adminBefore = s.adminToken
  t.equal((await s.call('GET', '/api/v1/ping', { token: tenant.token })).status, 200)

  await restart()

  t.equal(s.adminToken, adminBefore, 'the generated admin token survives the restart')
  const ws = await s.admin('GET', `/workspaces/${tenant.workspaceId}`)
  t.match(ws.data, { id: tenant.workspaceId, name: 'persisted and renamed', retention_days: 30 })
  const users = await s.admin('GET', `/workspaces/${tenant.workspaceId}/users`)
  t.same(
    users.data.map((u: any) => [u.email, u.owner, u.permissions]),
    [
      ['owner@example.com', true, ['groups.manage']],
      ['second@example.com', false, []],
    ],
  )
  t.equal(
    (await s.call('GET', '/api/v1/ping', { token: tenant.token })).status,
    200,
    'token still valid',
  )
  const r = await s.call('GET', '/api/v1/ping', { token: revoked.data.token })
  t.equal(r.status, 401, 'revoked token still 401 after restart')

  const ws2 = await s.admin('POST', '/workspaces', { name: 'after restart' })
  t.ok(ws2.data.id > tenant.workspaceId, 'ids continue above the stored maximum')
  const user3 = await s.admin('POST', `/workspaces/${ws2.data.id}/users`, {
    email: 'x@example.com',
  })
  t.ok(user3.data.id > user2.data.id, 'user ids too')
})

t.test('ADMIN_TOKEN set: it is the admin token and the file is left alone', async (t) => {
  const file = path.join(dataDir, 'admin-token')
  const before = fs.readFileSync(file, 'utf8')
  await restart({ ADMIN_TOKEN: 'explicit-admin-token-0123456789' })
  t.equal(s.adminToken, 'explicit-admin-token-0123456789')
  t.equal(
    (await s.call('GET', '/admin/v1/workspaces', { token: 'explicit-admin-token-0123456789' }))
      .status,
    200,
  )
  t.equal(
    (await s.call('GET', '/admin/v1/workspaces', { token: before.trim() })).status,
    401,
    'the generated token does not work while ADMIN_TOKEN is set',
  )
  t.equal(fs.readFileSync(file, 'utf8'), before, 'the file is unchanged')
})
