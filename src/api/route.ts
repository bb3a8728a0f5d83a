// Registers a /api/v1 route authenticated by an API token, from its contract: the token, its
// rate limit, the contract's scope and, for master-data writes, the creator's groups.manage
// are checked before the handler runs, which gets the authenticated principal and checks
// its body with the contract's schema (ctx.checkBody).
import type { TSchema } from '@sinclair/typebox'
import type { Authenticator, Principal } from '../http/auth.js'
import { routeContext, type RouteContext, type RouteContract } from '../http/contract.js'
import type { Router } from '../http/router.js'
import type { HttpRequest, HttpResponse } from '../http/types.js'

export type TokenHandler<B extends TSchema> = (
  req: HttpRequest,
  principal: Principal,
  ctx: RouteContext<B>,
) => Promise<HttpResponse> | HttpResponse

/** Contract and handler in one object, as fastify's route. */
export type TokenRoute<B extends TSchema> = Omit<RouteContract, 'auth' | 'body'> & {
  body?: B
  handler: TokenHandler<B>
}

export function tokenRoute<B extends TSchema = TSchema>(
  router: Router,
  auth: Authenticator,
  route: TokenRoute<B>,
): void {
  const { handler, ...contract } = route
  const { scope, groupsManage } = contract
  router.route({
    ...contract,
    auth: 'token',
    handler: async (req) =>
      handler(
        req,
        await auth.authenticate(req, { scope, groupsManage }),
        routeContext(contract, req),
      ),
  })
}
