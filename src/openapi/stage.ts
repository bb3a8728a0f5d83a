// Serves the OpenAPI document at GET /api/v1/openapi.json, generated once from the router's
// routes and the TypeBox schemas the handlers validate with.
import type { Router } from '../http/router.js'
import type { Services } from '../services.js'
import type { Stage } from '../stages.js'
import { buildOpenApi } from './document.js'

export function buildOpenApiStage(_s: Services): Stage {
  return {
    name: 'openapi',
    registerRoutes(router: Router) {
      let doc: unknown = null
      router.get('/api/v1/openapi.json', () => ({
        status: 200,
        body: (doc ??= buildOpenApi(router.list())),
      }))
    },
  }
}
