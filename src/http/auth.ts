// Bearer-token authentication for /api/v1: 401 for a missing, unknown, revoked or expired
// token; the per-token rate limit with its headers on every answer; 403 for a missing
// scope; for master-data writes also the creator's current `groups.manage`.
import crypto from 'node:crypto'
import { apiError } from '../errors.js'
import type { Coord } from '../coord/coord.js'
import { RefreshAhead } from '../coord/refresh-ahead.js'
import type { ApiToken, TenantRepo, User } from '../store/tenants.js'
import type { HttpRequest } from './types.js'

export type Scope = 'data:report' | 'data:read' | 'masterdata:write'
export const SCOPES: readonly Scope[] = ['data:report', 'data:read', 'masterdata:write']

export interface Principal {
  workspaceId: number
  tokenId: number
  userId: number
  scopes: string[]
}

export interface AuthRequirement {
  scope?: Scope
  /** The token's creator must currently hold `groups.manage`. */
  groupsManage?: boolean
}

export const hashToken = (token: string) => crypto.createHash('sha256').update(token).digest('hex')

export function bearer(req: HttpRequest): string | null {
  const h = req.headers['authorization']
  if (!h) return null
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  return m ? m[1]! : null
}

/**
 * Cached look-ups are served for at most this long; explicit invalidation (also across
 * instances) is immediate.
 */
const CACHE_MS = 2000

export class Authenticator {
  private readonly tokens: RefreshAhead<string, ApiToken | null>
  private readonly users: RefreshAhead<number, User | null>

  constructor(
    tenants: TenantRepo,
    private readonly coord: Coord,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = new RefreshAhead((hash) => tenants.findTokenByHash(hash), CACHE_MS, now)
    this.users = new RefreshAhead((id) => tenants.getUser(id), CACHE_MS, now)
  }

  /** Drops cached tokens and users so a revocation or permission change applies at once. */
  invalidate(): void {
    this.tokens.clear()
    this.users.clear()
  }

  async authenticate(req: HttpRequest, need: AuthRequirement = {}): Promise<Principal> {
    const raw = bearer(req)
    if (!raw) throw apiError('Unauthenticated')
    const token = await this.tokens.get(hashToken(raw))
    if (
      !token ||
      token.revoked_at !== null ||
      (token.expires_at !== null && Date.parse(token.expires_at) <= this.now())
    )
      throw apiError('Unauthenticated')
    req.workspaceId = token.workspace_id

    const limit = token.rate_limit_per_minute
    const r = await this.coord.take(`rl:token:${token.id}`, limit, 60_000)
    req.responseHeaders['x-ratelimit-limit'] = String(limit)
    req.responseHeaders['x-ratelimit-remaining'] = String(Math.max(0, limit - r.count))
    if (!r.ok) {
      req.responseHeaders['retry-after'] = String(Math.ceil(r.resetMs / 1000))
      throw apiError('RateLimited', `Rate limit of ${limit} requests per minute exceeded.`)
    }

    if (need.scope && !token.scopes.includes(need.scope))
      throw apiError('MissingScope', `This token lacks the ${need.scope} scope.`)
    if (need.groupsManage) {
      const user = await this.users.get(token.user_id)
      if (!user || !user.permissions.includes('groups.manage'))
        throw apiError(
          'Forbidden',
          "The token's creator no longer holds the groups.manage permission.",
        )
    }
    return {
      workspaceId: token.workspace_id,
      tokenId: token.id,
      userId: token.user_id,
      scopes: token.scopes,
    }
  }
}

/** Constant-time comparison of the admin bearer token. */
export function checkAdmin(req: HttpRequest, adminToken: string): void {
  const raw = bearer(req) ?? ''
  const a = crypto.createHash('sha256').update(raw).digest()
  const b = crypto.createHash('sha256').update(adminToken).digest()
  if (!raw || !crypto.timingSafeEqual(a, b)) throw apiError('Unauthenticated')
}
