// A small path router: static segments and `:param` segments. We route ourselves (one uWS
// `any('/*')` handler) so that an unknown path is a JSON 404 and a known path with the
// wrong method is a JSON 405 with `Allow`, which uWS's own router cannot tell apart. Each
// route keeps its contract (contract.ts), the one description of it the rest is made from.
import type { RouteContract } from './contract.js'
import type { HttpRequest, HttpResponse } from './types.js'

export type Handler = (req: HttpRequest) => Promise<HttpResponse> | HttpResponse

export interface RouteOptions {
  /** Largest accepted body for this route, in bytes; the server's default otherwise. */
  maxBodyBytes?: number
}

interface Route {
  method: string
  segments: string[]
  handler: Handler
  options: RouteOptions
  contract?: RouteContract
}

export type RouteMatch =
  | { kind: 'found'; handler: Handler; params: Record<string, string>; options: RouteOptions }
  | { kind: 'method_not_allowed'; allowed: string[] }
  | { kind: 'not_found' }

export interface ListedRoute {
  method: string
  pattern: string
  contract?: RouteContract
}

export class Router {
  private readonly routes: Route[] = []

  /** A route: its contract (method, path, auth, schemas, CLI command) and its handler. */
  route(route: RouteContract & { handler: Handler }): this {
    const { handler, ...contract } = route
    const { method, path, maxBodyBytes } = contract
    const options = maxBodyBytes === undefined ? {} : { maxBodyBytes }
    this.routes.push({ method, segments: split(path), handler, options, contract })
    return this
  }

  /** A route without a contract (tests); the OpenAPI document marks it undocumented. */
  add(method: string, pattern: string, handler: Handler, options: RouteOptions = {}): this {
    this.routes.push({ method: method.toUpperCase(), segments: split(pattern), handler, options })
    return this
  }

  // Routes of the tests (test/http/rate-limit-cases.ts); the service's own use route().
  get = (p: string, h: Handler, o?: RouteOptions) => this.add('GET', p, h, o)
  post = (p: string, h: Handler, o?: RouteOptions) => this.add('POST', p, h, o)

  /** Every registered route with its contract: the source of the OpenAPI document. */
  list(): ListedRoute[] {
    return this.routes.map((r) => ({
      method: r.method,
      pattern: '/' + r.segments.join('/'),
      ...(r.contract ? { contract: r.contract } : {}),
    }))
  }

  match(method: string, path: string): RouteMatch {
    const parts = split(path)
    const allowed: string[] = []
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts)
      if (!params) continue
      if (route.method === method || (method === 'HEAD' && route.method === 'GET'))
        return { kind: 'found', handler: route.handler, params, options: route.options }
      allowed.push(route.method)
    }
    return allowed.length ? { kind: 'method_not_allowed', allowed } : { kind: 'not_found' }
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0)
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null
  const params: Record<string, string> = {}
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!
    if (p.startsWith(':')) {
      try {
        params[p.slice(1)] = decodeURIComponent(parts[i]!)
      } catch {
        return null
      }
    } else if (p !== parts[i]) return null
  }
  return params
}
