// Registers a /api/v1 route authenticated by an API token, from its contract: the token, its
// rate limit, the contract's scope and, for master-data writes, the creator's groups.manage
// are checked before the handler runs, which gets the authenticated principal.
import type { Authenticator, Principal } from '../http/auth.js'
import type { RouteContract } from '../http/contract.js'
import type { Router } from '../http/router.js'
import type { HttpRequest, HttpResponse } from '../http/types.js'

export type TokenHandler = (
  req: HttpRequest,
  principal: Principal,
) => Promise<HttpResponse> | HttpResponse

export function tokenRoute(
  router: Router,
  auth: Authenticator,
  contract: Omit<RouteContract, 'auth'>,
  handler: TokenHandler,
): void {
  const { scope, groupsManage } = contract
  router.route({ ...contract, auth: 'token' }, async (req) =>
    handler(req, await auth.authenticate(req, { scope, groupsManage })),
  )
}
