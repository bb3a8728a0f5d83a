// Operator API: imports (operator-api.md, "Imports and transfers"). The body is NDJSON, not
// JSON, and may be larger than an ordinary request.
import { apiError, validationError } from '../errors.js'
import { Type } from '@sinclair/typebox'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { importView } from '../jobs/imports.js'
import type { AdminDeps } from './deps.js'
import { adminRoute, idParam, notFound } from './guard.js'

export function registerImportAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'config' | 'imports' | 'tenants'>,
): void {
  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/imports',
    summary: 'Import NDJSON, one reportData item a line',
    body: Type.String(),
    bodyByHand: true,
    bodyMediaType: 'application/x-ndjson',
    success: 202,
    maxBodyBytes: Math.max(s.config.MAX_BODY_BYTES, 256 * 1024 * 1024),
    cli: {
      name: 'imports:create',
      summary: 'Import NDJSON readings (--file path, or - for stdin).',
    },
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      if (!(await s.tenants.getWorkspace(ws))) notFound('workspace', ws)
      if (req.body.length === 0)
        throw validationError({
          body: ['An NDJSON body (one reportData item per line) is required.'],
        })
      const r = await s.imports.start(ws, req.body)
      return json(202, { data: { id: r.id, status: r.status } })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/imports/:id',
    summary: 'Import status',
    cli: {
      name: 'imports:show',
      summary: "Show an import's status and counts.",
      param: 'import',
    },
    handler: async (req) => {
      const id = idParam(req, 'id')
      const r = await s.imports.get(id)
      if (!r) throw apiError('NotFound', `No import with id ${id}.`)
      return json(200, { data: importView(r) })
    },
  })
}
