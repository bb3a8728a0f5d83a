import { apiError } from '../errors.js'
import { checkAdmin } from '../http/auth.js'
import type { RouteContract } from '../http/contract.js'
import type { Handler, Router } from '../http/router.js'
import type { HttpRequest } from '../http/types.js'
import type { AdminDeps } from './deps.js'

/** An admin route's contract: its path is below /admin/v1, its auth the admin token. */
export type AdminContract = Omit<RouteContract, 'auth' | 'scope' | 'groupsManage'>

/** Registers an admin route: the admin bearer token is checked before the handler runs. */
export function adminRoute(
  router: Router,
  s: Pick<AdminDeps, 'adminToken'>,
  contract: AdminContract,
  handler: Handler,
): void {
  const declared: RouteContract = { ...contract, path: `/admin/v1${contract.path}`, auth: 'admin' }
  router.route(declared, (req) => {
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
