// Serves the OpenAPI document at GET /api/v1/openapi.json, generated once from the router's
// routes and the TypeBox schemas the handlers validate with. Registered last, so the
// document lists every other route.
import type { Router } from '../http/router.js'
import { buildOpenApi } from './document.js'

export function registerOpenApi(router: Router): void {
  let doc: unknown = null
  router.get('/api/v1/openapi.json', () => ({
    status: 200,
    body: (doc ??= buildOpenApi(router.list())),
  }))
}
