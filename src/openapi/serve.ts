// Serves the OpenAPI document at GET /api/v1/openapi.json, generated once from the contracts
// the routes were registered with (method, path, auth, schemas the handlers validate with). Registered last, so the
// document lists every other route.
import type { Router } from '../http/router.js'
import { buildOpenApi } from './document.js'

export function registerOpenApi(router: Router): void {
  let doc: unknown = null
  router.route({
    method: 'GET',
    path: '/api/v1/openapi.json',
    summary: 'This document',
    auth: 'none',
    handler: () => ({ status: 200, body: (doc ??= buildOpenApi(router.list())) }),
  })
}
