// GET /api/v1/openapi.json: OpenAPI 3.1 made from the routes' contracts, every route of the
// router documented (none falls back to `x-undocumented`), request bodies the schemas the
// handlers check, and each route refusing a request without the token its contract names.
import t from 'tap'
import { buildOpenApi, toOpenApiPath } from '../../src/openapi/document.js'
import { WorkspaceCreate } from '../../src/admin/tenants.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())

t.test('served, OpenAPI 3.1, every route in it and documented', async (t) => {
  const r = await s.call('GET', '/api/v1/openapi.json')
  t.equal(r.status, 200)
  const doc = r.body
  t.equal(doc.openapi, '3.1.0')
  const routes = s.app.router.list()
  t.ok(routes.length > 50, `${routes.length} routes`)
  for (const route of routes) {
    const op = doc.paths[toOpenApiPath(route.pattern)]?.[route.method.toLowerCase()]
    t.ok(op, `${route.method} ${route.pattern} is in the document`)
    t.notOk(op?.['x-undocumented'], `${route.method} ${route.pattern} is described`)
  }
  t.ok(doc.paths['/api/v1/stream'].get, 'the WebSocket stream is described')
  const ids = Object.values(doc.paths).flatMap((p: any) =>
    Object.values(p).map((o: any) => o.operationId),
  )
  t.equal(new Set(ids).size, ids.length, 'operation ids are unique')
})

t.test('request bodies are the validating schemas', async (t) => {
  const doc = (await s.call('GET', '/api/v1/openapi.json')).body
  const ws = doc.paths['/admin/v1/workspaces'].post.requestBody.content['application/json'].schema
  t.same(ws, JSON.parse(JSON.stringify(WorkspaceCreate)))
  const report = doc.paths['/api/v1/reportData'].post
  t.same(report['x-scope'], 'data:report')
  const items =
    report.requestBody.content['application/json'].schema.properties.readings.items.anyOf
  t.equal(items.length, 2, 'shape A and shape B')
  t.ok(items[0].required.includes('recorded_at'))
  t.ok(report.responses['422'] && report.responses['429'] && report.responses['401'])
})

t.test('each route enforces the auth its contract declares', async (t) => {
  for (const { method, pattern, contract } of s.app.router.list()) {
    if (!contract) continue
    const path = pattern.replace(/:\w+/g, '1')
    const r = await s.call(method, path, { body: method === 'GET' ? undefined : {} })
    const want = contract.auth === 'none' ? 200 : 401
    t.equal(r.status, want, `${method} ${pattern} (${contract.auth}) without a token: ${want}`)
  }
})

t.test('an unknown route shows up as undocumented', async (t) => {
  const doc = buildOpenApi([{ method: 'GET', pattern: '/api/v1/nope/:x' }]) as any
  t.equal(doc.paths['/api/v1/nope/{x}'].get['x-undocumented'], true)
})
