import { apiError } from '../errors.js'
import { checkAdmin } from '../http/auth.js'
import type { TSchema } from '@sinclair/typebox'
import { routeContext, type RouteContext, type RouteContract } from '../http/contract.js'
import type { Router } from '../http/router.js'
import type { HttpRequest, HttpResponse } from '../http/types.js'
import type { AdminDeps } from './deps.js'

/** An admin route's contract: its path is below /admin/v1, its auth the admin token. */
export type AdminContract<B extends TSchema> = Omit<
  RouteContract,
  'auth' | 'scope' | 'groupsManage' | 'body'
> & { body?: B }

export type AdminHandler<B extends TSchema> = (
  req: HttpRequest,
  ctx: RouteContext<B>,
) => Promise<HttpResponse> | HttpResponse

/**
 * Registers an admin route, its contract and handler in one object (as fastify's route): the
 * admin bearer token is checked before the handler runs, and the handler checks its body
 * with the contract's schema (ctx.checkBody).
 */
export function adminRoute<B extends TSchema = TSchema>(
  router: Router,
  s: Pick<AdminDeps, 'adminToken'>,
  route: AdminContract<B> & { handler: AdminHandler<B> },
): void {
  const { handler, ...contract } = route
  router.route({
    ...contract,
    path: `/admin/v1${contract.path}`,
    auth: 'admin',
    handler: (req) => {
      checkAdmin(req, s.adminToken)
      return handler(req, routeContext(contract, req))
    },
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
