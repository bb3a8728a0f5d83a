// Operator API: imports (operator-api.md, "Imports and transfers"). The body is NDJSON, not
// JSON, and may be larger than an ordinary request.
import { apiError, validationError } from '../errors.js'
import { checkAdmin } from '../http/auth.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { importView } from '../jobs/imports.js'
import type { AdminDeps } from './deps.js'
import { adminRoute, idParam, notFound } from './guard.js'

export function registerImportAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'config' | 'imports' | 'tenants'>,
): void {
  const runner = () => s.imports!
  router.add(
    'POST',
    '/admin/v1/workspaces/:ws/imports',
    async (req) => {
      checkAdmin(req, s.adminToken)
      const ws = idParam(req, 'ws')
      if (!(await s.tenants.getWorkspace(ws))) notFound('workspace', ws)
      if (req.body.length === 0)
        throw validationError({
          body: ['An NDJSON body (one reportData item per line) is required.'],
        })
      const r = await runner().start(ws, req.body)
      return json(202, { data: { id: r.id, status: r.status } })
    },
    { maxBodyBytes: Math.max(s.config.MAX_BODY_BYTES, 256 * 1024 * 1024) },
  )

  adminRoute(router, s, 'GET', '/imports/:id', async (req) => {
    const id = idParam(req, 'id')
    const r = await runner().get(id)
    if (!r) throw apiError('NotFound', `No import with id ${id}.`)
    return json(200, { data: importView(r) })
  })
}
