// What a route promises, declared once beside its handler (as fastify's route `schema`):
// the router keeps it, the route wrappers enforce its auth from it and check bodies with its
// schema, the OpenAPI document is generated from it (src/openapi), and so is the CLI's
// command table (bin/commands.json).
import type { Static, TSchema } from '@sinclair/typebox'
import { check } from '../validate.js'
import type { Scope } from './auth.js'
import type { HttpRequest } from './types.js'

export type Auth = 'token' | 'admin' | 'webhook' | 'none'

export interface QueryParam {
  name: string
  schema: TSchema
  description?: string
}

/**
 * The `meterflow` command of an admin route (operator-api.md "CLI"). Its options are the
 * path parameter, then the body (or query) fields in schema order, kebab-cased, typed and
 * required as the schema says; `param` and `fields` change that where the CLI differs.
 */
export interface CliCommand {
  /** `group:verb`, e.g. `workspaces:create`. */
  name: string
  /** Its line in `meterflow help`. */
  summary: string
  /** Option of the path parameter, `name` or `name:type`; default `ws` → workspace, type int. */
  param?: string
  /** Fields offered, in help order: `field`, `option=field`, either with `:type`. */
  fields?: string[]
}

export interface RouteContract {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** `/api/v1/meters/:meter`; `:name` segments are path parameters. */
  path: string
  summary: string
  auth: Auth
  scope?: Scope
  /** Master-data writes: the token's creator must currently hold `groups.manage`. */
  groupsManage?: boolean
  /** The schema the handler checks the body with. */
  body?: TSchema
  /** The body is checked by hand; `body` describes it. */
  bodyByHand?: boolean
  bodyMediaType?: string
  query?: QueryParam[]
  /** Status of success; 200 unless given. */
  success?: number
  response?: TSchema
  /** Largest accepted body in bytes; the server's default otherwise. */
  maxBodyBytes?: number
  cli?: CliCommand
}

/** What a handler gets from its contract besides the request. */
export interface RouteContext<B extends TSchema> {
  /**
   * The body (or `value`, a body the handler has read itself) checked against the contract's
   * `body` schema: 422 naming each bad field. The handler calls it where its checks put it
   * (after a 404 for a missing resource, as before).
   */
  checkBody(value?: unknown): Static<B>
}

/** The context of one request to a route whose contract is `contract`. */
export function routeContext<B extends TSchema>(
  contract: { body?: B },
  req: HttpRequest,
): RouteContext<B> {
  return {
    checkBody: (value = req.json()) => {
      if (!contract.body) throw new Error('checkBody: the route declares no body schema')
      return check(contract.body, value)
    },
  }
}
