// OpenAPI 3.1 from the router's routes (router.list()) and the contract each was registered
// with (http/contract.ts). TypeBox schemas are JSON Schema 2020-12, which OpenAPI 3.1 takes
// as is; a route without a contract is still listed, marked `x-undocumented` (the test
// refuses those).
import type { TSchema } from '@sinclair/typebox'
import { ErrorTable } from '../errors.js'
import type { Auth, RouteContract } from '../http/contract.js'
import type { ListedRoute } from '../http/router.js'
import { StreamAnswer, StreamMessage } from '../stream/protocol.js'

type Json = Record<string, unknown>

/** A TypeBox schema as plain JSON Schema (drops TypeBox's symbol keys). */
const plain = (s: TSchema): Json => JSON.parse(JSON.stringify(s)) as Json

const ErrorBody: Json = {
  type: 'object',
  required: ['message'],
  properties: {
    message: { type: 'string' },
    errors: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string' } },
      description: 'Field key (e.g. readings.3.payload.value) to messages; 422 only.',
    },
  },
}

const SECURITY: Record<Auth, Json[]> = {
  token: [{ apiToken: [] }],
  admin: [{ adminToken: [] }],
  webhook: [{ webhookToken: [] }, { webhookTokenHeader: [] }],
  none: [],
}

export function toOpenApiPath(pattern: string): string {
  return pattern.replace(/:([A-Za-z_]\w*)/g, '{$1}')
}

function errorResponses(
  doc: Pick<RouteContract, 'auth' | 'scope' | 'body' | 'query'> | undefined,
): Json {
  const out: Json = {}
  const add = (status: number, description: string) =>
    (out[String(status)] = {
      description,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    })
  if (doc?.auth && doc.auth !== 'none') add(401, ErrorTable.Unauthenticated.message)
  if (doc?.auth === 'token' && doc.scope) add(403, ErrorTable.MissingScope.message)
  if (doc?.auth === 'token' || doc?.auth === 'webhook') add(429, ErrorTable.RateLimited.message)
  if (doc?.auth === 'admin') add(404, ErrorTable.NotFound.message)
  if (doc?.body || doc?.query) add(422, ErrorTable.ValidationFailed.message)
  add(503, `${ErrorTable.Unavailable.message} (coordination store or storage unreachable)`)
  return out
}

export function buildOpenApi(routes: ListedRoute[]): Json {
  const paths: Record<string, Record<string, Json>> = {}
  for (const r of routes) {
    const path = toOpenApiPath(r.pattern)
    const doc = r.contract
    const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }))
    for (const q of doc?.query ?? [])
      params.push({ name: q.name, in: 'query', required: false, schema: plain(q.schema) as never })
    const success = doc?.success ?? 200
    const op: Json = {
      operationId: `${r.method.toLowerCase()}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string) => (c ? c.toUpperCase() : ''))}`,
      summary: doc?.summary ?? 'Undocumented',
      tags: [path.startsWith('/admin/') ? 'admin' : 'api'],
      security: SECURITY[doc?.auth ?? 'none'],
      parameters: params,
      responses: {
        [String(success)]: {
          description: 'Success',
          content: { 'application/json': { schema: doc?.response ? plain(doc.response) : {} } },
        },
        ...(r.pattern === '/api/v1/reportData'
          ? {
              '200': {
                description: 'Nothing new stored',
                content: { 'application/json': { schema: plain(doc!.response!) } },
              },
            }
          : {}),
        ...errorResponses(doc),
      },
    }
    if (doc?.scope) op['x-scope'] = doc.scope
    if (doc?.body)
      op.requestBody = {
        required: true,
        content: { [doc.bodyMediaType ?? 'application/json']: { schema: plain(doc.body) } },
        ...(doc.bodyByHand ? { 'x-validated-by-hand': true } : {}),
      }
    if (!doc) op['x-undocumented'] = true
    ;(paths[path] ??= {})[r.method.toLowerCase()] = op
  }
  paths['/api/v1/stream'] = {
    get: {
      operationId: 'getApiV1Stream',
      summary: 'WebSocket streaming ingest (upgrade); each message a reportData batch with an id',
      description:
        'Send {id, readings} text messages; each is answered {id, status, body} with the status and body POST /api/v1/reportData would give. See README "Streaming ingest (WebSocket)".',
      tags: ['api'],
      security: SECURITY.token,
      'x-scope': 'data:report',
      'x-websocket': { message: plain(StreamMessage), answer: plain(StreamAnswer) },
      responses: {
        '101': { description: 'Switching Protocols' },
        ...errorResponses({ auth: 'token', scope: 'data:report' }),
      },
    },
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Meterflow',
      version: '1',
      description:
        'Metering data collection: /api/v1 (API tokens) and /admin/v1 (operator token). Generated from the schemas the service validates with.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: { Error: ErrorBody },
      securitySchemes: {
        apiToken: { type: 'http', scheme: 'bearer', description: 'API token of a workspace' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
        webhookToken: { type: 'http', scheme: 'bearer', description: 'Webhook endpoint token' },
        webhookTokenHeader: { type: 'apiKey', in: 'header', name: 'X-Webhook-Token' },
      },
    },
  }
}
