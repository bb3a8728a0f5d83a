// Operator API: webhook ingest endpoints (operator-api.md, "Webhook ingest endpoints").
// The token appears only in the create and rotate-token responses; a hash is stored.
import { Type } from '@sinclair/typebox'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import type { AdminDeps } from './deps.js'
import { mappingOrPreset } from '../presets/resolve.js'
import { compileMapping } from '../webhooks/mapping.js'
import {
  hashWebhookToken,
  newEndpointId,
  newWebhookToken,
  type WebhookEndpoint,
} from '../webhooks/repo.js'
import { adminRoute, idParam, notFound } from './guard.js'

export const EndpointCreate = Type.Object(
  {
    name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
    mapping: Type.Optional(Type.Unknown()),
    /** A mapping preset by name (src/presets), instead of `mapping`. */
    preset: Type.Optional(Type.String({ maxLength: 100 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export const EndpointPatch = Type.Object(
  {
    name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
    mapping: Type.Optional(Type.Unknown()),
    preset: Type.Optional(Type.String({ maxLength: 100 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const endpointView = (ep: WebhookEndpoint) => ({
  id: ep.id,
  name: ep.name,
  enabled: ep.enabled,
  mapping: ep.mapping,
  path: `/api/v1/webhooks/${ep.id}`,
  created_at: ep.created_at,
})

export function registerWebhookAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'clock' | 'tenants' | 'webhooks'>,
): void {
  const endpoint = async (id: string) => {
    const ep = id.length <= 64 ? await s.webhooks.get(id) : null
    return ep ?? notFound('webhook endpoint', id)
  }

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/webhook-endpoints',
    summary: 'Create a webhook ingest endpoint (token shown only here)',
    body: EndpointCreate,
    success: 201,
    cli: {
      name: 'webhooks:create',
      summary: 'Create a webhook ingest endpoint with a JSONata mapping or a preset.',
      fields: ['mapping', 'preset', 'name:string', 'enabled'],
    },
    handler: async (req, { checkBody }) => {
      const ws = idParam(req, 'ws')
      if (!(await s.tenants.getWorkspace(ws))) notFound('workspace', ws)
      const b = checkBody()
      const mapping = compileMapping(mappingOrPreset(b))
      const token = newWebhookToken()
      const ep = await s.webhooks.save({
        id: newEndpointId(),
        workspace_id: ws,
        name: b.name ?? null,
        token_hash: hashWebhookToken(token),
        enabled: b.enabled ?? true,
        mapping: mapping.def,
        created_at: new Date(s.clock.now()).toISOString(),
      })
      return json(201, { data: { ...endpointView(ep), token } })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/webhook-endpoints',
    summary: 'List webhook ingest endpoints',
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      if (!(await s.tenants.getWorkspace(ws))) notFound('workspace', ws)
      return json(200, { data: (await s.webhooks.list(ws)).map(endpointView) })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/webhook-endpoints/:id',
    summary: 'Get a webhook ingest endpoint',
    handler: async (req) => json(200, { data: endpointView(await endpoint(req.params.id ?? '')) }),
  })

  adminRoute(router, s, {
    method: 'PATCH',
    path: '/webhook-endpoints/:id',
    summary: 'Enable, disable or remap',
    body: EndpointPatch,
    cli: {
      name: 'webhooks:update',
      summary: 'Enable/disable a webhook endpoint or change its mapping.',
      param: 'endpoint:string',
      fields: ['enabled', 'mapping', 'preset'],
    },
    handler: async (req, { checkBody }) => {
      const ep = await endpoint(req.params.id ?? '')
      const b = checkBody()
      const next = { ...ep }
      if (b.mapping !== undefined || b.preset !== undefined)
        next.mapping = compileMapping(mappingOrPreset(b)).def
      if (b.enabled !== undefined) next.enabled = b.enabled
      if (b.name !== undefined) next.name = b.name
      return json(200, { data: endpointView(await s.webhooks.save(next)) })
    },
  })

  adminRoute(router, s, {
    method: 'POST',
    path: '/webhook-endpoints/:id/rotate-token',
    summary: 'Issue a new endpoint token',
    cli: {
      name: 'webhooks:rotate-token',
      summary: 'Issue a new token for a webhook endpoint.',
      param: 'endpoint:string',
    },
    handler: async (req) => {
      const ep = await endpoint(req.params.id ?? '')
      const token = newWebhookToken()
      await s.webhooks.save({ ...ep, token_hash: hashWebhookToken(token) })
      return json(200, { data: { token } })
    },
  })
}
