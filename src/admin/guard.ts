import { apiError } from '../errors.js'
import { checkAdmin } from '../http/auth.js'
import type { Handler, Router } from '../http/router.js'
import type { HttpRequest } from '../http/types.js'
import type { AdminDeps } from './deps.js'

/** Registers an admin route: the admin bearer token is checked before the handler runs. */
export function adminRoute(
  router: Router,
  s: Pick<AdminDeps, 'adminToken'>,
  method: string,
  pattern: string,
  handler: Handler,
): void {
  router.add(method, `/admin/v1${pattern}`, (req) => {
    checkAdmin(req, s.adminToken)
    return handler(req)
  })
}

/** An integer path parameter; anything else is a 404 (no such resource). */
export function idParam(req: HttpRequest, name: string): number {
  const v = req.params[name] ?? ''
  if (!/^\d{1,15}$/.test(v)) throw apiError('NotFound', `No ${name} ${v}.`)
  return Number(v)
}

export function notFound(what: string, id: number | string): never {
  throw apiError('NotFound', `No ${what} with id ${id}.`)
}
