import t from 'tap'
import { startTestServer } from '../helpers/server.js'
import { createMeter, qs } from '../query/helpers.js'

const s = await startTestServer()
t.teardown(() => s.close())
const a = await s.tenant()
const other = await s.tenant()
const post = (body: unknown, token = a.token) =>
  s.call('POST', '/api/v1/meterGroups', { token, body })
const patch = (id: number | string, body: unknown) =>
  s.call('PATCH', `/api/v1/meterGroups/${id}`, { token: a.token, body })
const list = async (q = '') =>
  (await s.call('GET', `/api/v1/meterGroups${q}`, { token: a.token })).body.data

t.test('create root and child groups; paths; sibling clash 409', async (t) => {
  const root = await post({ name: 'Site' })
  t.equal(root.status, 201)
  t.same(root.body.data, {
    id: root.body.data.id,
    name: 'Site',
    parent_id: null,
    path: `/${root.body.data.id}/`,
    meter_count: 0,
  })
  const child = await post({ name: 'Floor 1', parent_id: root.body.data.id })
  t.equal(child.body.data.path, `/${root.body.data.id}/${child.body.data.id}/`)
  const clash = await post({ name: 'Floor 1', parent_id: root.body.data.id })
  t.equal(clash.status, 409)
  t.ok(clash.body.message)
  t.equal((await post({ name: 'Site' })).status, 409, 'root siblings clash too')
  t.equal((await post({ name: 'Floor 1' })).status, 201, 'same name under another parent is fine')
})

t.test('create: 422 for bad input and unknown / foreign parent', async (t) => {
  const theirs = await post({ name: 'theirs' }, other.token)
  for (const [body, field] of [
    [{}, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 3 }, 'name'],
    [{ name: 'x', parent_id: 'a' }, 'parent_id'],
    [{ name: 'x', parent_id: 999999 }, 'parent_id'],
    [{ name: 'x', parent_id: theirs.body.data.id }, 'parent_id'],
    [{ name: 'x', extra: 1 }, 'extra'],
  ] as [unknown, string][]) {
    const r = await post(body)
    t.equal(r.status, 422, JSON.stringify(body))
    t.ok(r.body.errors?.[field], `names ${field}: ${r.text}`)
  }
  t.equal(
    (await s.call('POST', '/api/v1/meterGroups', { token: a.token, raw: 'nope' })).status,
    422,
  )
})

t.test('list ordered by path, meter_count direct only, subtree filter', async (t) => {
  const w = await s.tenant()
  const p = (body: unknown) =>
    s.call('POST', '/api/v1/meterGroups', { token: w.token, body }).then((r) => r.body.data)
  const A = await p({ name: 'A' })
  const B = await p({ name: 'B' })
  const A1 = await p({ name: 'A1', parent_id: A.id })
  const A1x = await p({ name: 'A1x', parent_id: A1.id })
  await createMeter(s, w.token, { meter_identifier: 'm1', group_id: A1.id })
  await createMeter(s, w.token, { meter_identifier: 'm2', group_id: A1.id })
  await createMeter(s, w.token, { meter_identifier: 'm3', group_id: A.id })
  const all = (await s.call('GET', '/api/v1/meterGroups', { token: w.token })).body.data
  t.same(
    all.map((g: any) => g.path),
    [A, A1, A1x, B].map((g) => g.path).sort(),
  )
  t.same(Object.fromEntries(all.map((g: any) => [g.name, g.meter_count])), {
    A: 1,
    A1: 2,
    A1x: 0,
    B: 0,
  })
  const sub = (
    await s.call('GET', `/api/v1/meterGroups${qs({ group_id: A1.id })}`, { token: w.token })
  ).body.data
  t.same(
    sub.map((g: any) => g.name),
    ['A1', 'A1x'],
  )
  const bad = await s.call('GET', '/api/v1/meterGroups?group_id=x', { token: w.token })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors.group_id)
  const unknown = await s.call('GET', `/api/v1/meterGroups${qs({ group_id: 999999 })}`, {
    token: w.token,
  })
  t.equal(unknown.status, 422)
  const foreign = await s.call('GET', `/api/v1/meterGroups${qs({ group_id: A.id })}`, {
    token: a.token,
  })
  t.equal(foreign.status, 422, "another workspace's group is unknown")
})

t.test('rename, move rewrites the subtree, 409 rules', async (t) => {
  const X = (await post({ name: 'X' })).body.data
  const Y = (await post({ name: 'Y' })).body.data
  const X1 = (await post({ name: 'X1', parent_id: X.id })).body.data
  const X11 = (await post({ name: 'X11', parent_id: X1.id })).body.data
  await post({ name: 'X1', parent_id: Y.id })

  let r = await patch(X1.id, { name: 'X1 renamed' })
  t.equal(r.status, 200)
  t.match(r.body.data, { name: 'X1 renamed', parent_id: X.id, path: X1.path })

  t.equal((await patch(X.id, { parent_id: X11.id })).status, 409, 'into own subtree')
  t.equal((await patch(X.id, { parent_id: X.id })).status, 409, 'into itself')
  r = await patch(X1.id, { name: 'X1', parent_id: Y.id })
  t.equal(r.status, 409, 'clash with new sibling')

  r = await patch(X1.id, { parent_id: Y.id })
  t.equal(r.status, 200)
  t.same(r.body.data, {
    id: X1.id,
    name: 'X1 renamed',
    parent_id: Y.id,
    path: `${Y.path}${X1.id}/`,
    meter_count: 0,
  })
  const after = await list()
  t.equal(
    after.find((g: any) => g.id === X11.id).path,
    `${Y.path}${X1.id}/${X11.id}/`,
    'descendant path rewritten',
  )

  r = await patch(X1.id, { parent_id: null })
  t.equal(r.body.data.path, `/${X1.id}/`)
  t.equal((await list()).find((g: any) => g.id === X11.id).path, `/${X1.id}/${X11.id}/`)
  r = await patch(X1.id, {})
  t.equal(r.status, 200, 'omitting parent_id leaves the group where it is')
  t.equal(r.body.data.parent_id, null)

  const sib = (await post({ name: 'Sib' })).body.data
  t.equal((await patch(sib.id, { name: 'X' })).status, 409, 'rename clash')
})

t.test('patch: 404 unknown/foreign, 422 bad input', async (t) => {
  const g = (await post({ name: 'P' })).body.data
  const theirs = (await post({ name: 'Q' }, other.token)).body.data
  t.equal((await patch(999999, { name: 'a' })).status, 404)
  t.equal((await patch(theirs.id, { name: 'a' })).status, 404)
  const bad = await patch('abc', { name: 'a' })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors.group)
  for (const [body, field] of [
    [{ name: '' }, 'name'],
    [{ parent_id: 'x' }, 'parent_id'],
    [{ parent_id: 999999 }, 'parent_id'],
    [{ nme: 'typo' }, 'nme'],
  ] as [unknown, string][]) {
    const r = await patch(g.id, body)
    t.equal(r.status, 422, JSON.stringify(body))
    t.ok(r.body.errors?.[field], `names ${field}`)
  }
})

t.test('delete: empty only; 409 with subgroups or meters', async (t) => {
  const D = (await post({ name: 'D' })).body.data
  const D1 = (await post({ name: 'D1', parent_id: D.id })).body.data
  await createMeter(s, a.token, { meter_identifier: 'in-D1', group_id: D1.id })
  const del = (id: number) => s.call('DELETE', `/api/v1/meterGroups/${id}`, { token: a.token })
  t.equal((await del(D.id)).status, 409, 'has subgroups')
  t.equal((await del(D1.id)).status, 409, 'has meters')
  const m = (await s.call('GET', '/api/v1/meters', { token: a.token })).body.data.find(
    (x: any) => x.meter_identifier === 'in-D1',
  )
  await s.call('PATCH', `/api/v1/meters/${m.id}`, { token: a.token, body: { group_id: null } })
  const r = await del(D1.id)
  t.equal(r.status, 200)
  t.same(r.body.data, { deleted: true, id: D1.id })
  t.equal((await del(D.id)).status, 200)
  t.equal((await del(D.id)).status, 404)
  t.notOk((await list()).some((g: any) => g.id === D.id))
})

t.test('scopes', async (t) => {
  const user = await s.admin('POST', `/workspaces/${a.workspaceId}/users`, {
    email: 'g@x.io',
    permissions: [],
  })
  const tok = (
    await s.admin('POST', `/workspaces/${a.workspaceId}/tokens`, {
      user_id: user.data.id,
      scopes: ['data:read', 'masterdata:write'],
    })
  ).data.token
  t.equal((await s.call('GET', '/api/v1/meterGroups', { token: tok })).status, 200)
  t.equal(
    (await s.call('POST', '/api/v1/meterGroups', { token: tok, body: { name: 'n' } })).status,
    403,
  )
  t.equal((await s.call('DELETE', '/api/v1/meterGroups/1', { token: tok })).status, 403)
  t.equal((await s.call('GET', '/api/v1/meterGroups')).status, 401)
})
