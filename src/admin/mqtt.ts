// Operator API: MQTT ingest subscriptions (docs/mqtt.md). The password is write-only: views
// say only whether one is set. Every change is announced so the owning instance restarts
// the subscription.
import { Type } from '@sinclair/typebox'
import { FieldErrorCollector } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import type { MqttStatus } from '../mqtt/status.js'
import { mappingOrPreset } from '../presets/resolve.js'
import type { AdminDeps } from './deps.js'
import type { MqttSubscription } from '../store/mqtt-subscriptions.js'
import { compileMapping } from '../webhooks/mapping.js'
import { adminRoute, idParam, notFound } from './guard.js'

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()])
const fields = {
  name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  broker_url: Type.String({ minLength: 1, maxLength: 2000 }),
  username: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  password: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  topics: Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), {
    minItems: 1,
    maxItems: 32,
  }),
  qos: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(1)])),
  mapping: Type.Optional(Type.Unknown()),
  preset: Type.Optional(Type.String({ maxLength: 100 })),
  enabled: Type.Optional(Type.Boolean()),
}
export const MqttSubscriptionCreate = Type.Object(fields, { additionalProperties: false })
export const MqttSubscriptionPatch = Type.Object(
  {
    ...fields,
    broker_url: Type.Optional(fields.broker_url),
    topics: Type.Optional(fields.topics),
  },
  { additionalProperties: false },
)

const PROTOCOLS = ['mqtt:', 'mqtts:', 'tcp:', 'ssl:', 'tls:', 'ws:', 'wss:']

/** Checks broker URL and topic filters; 422 naming the field. */
function checkConnection(b: { broker_url?: string; topics?: string[] }): void {
  const errs = new FieldErrorCollector()
  if (b.broker_url !== undefined) {
    let u: URL | null = null
    try {
      u = new URL(b.broker_url)
    } catch {
      u = null
    }
    if (!u || !PROTOCOLS.includes(u.protocol) || !u.hostname)
      errs.add('broker_url', `The broker_url must be a URL with one of ${PROTOCOLS.join(' ')}.`)
    // Credentials in the URL would be shown back by every view: they have their own fields.
    else if (u.username || u.password)
      errs.add('broker_url', 'Put credentials in username and password, not in the broker_url.')
  }
  b.topics?.forEach((f, i) => {
    const levels = f.split('/')
    const ok =
      !f.includes('\u0000') &&
      levels.every(
        (l, j) =>
          (l === '#' ? j === levels.length - 1 : !l.includes('#')) &&
          (l === '+' || !l.includes('+')),
      )
    if (!ok)
      errs.add(
        `topics.${i}`,
        'Not a valid MQTT topic filter (+ and # must be whole levels, # last).',
      )
  })
  errs.throwIfAny()
}

export const subscriptionView = (sub: MqttSubscription, status: MqttStatus) => ({
  id: sub.id,
  workspace_id: sub.workspace_id,
  name: sub.name,
  broker_url: sub.broker_url,
  username: sub.username,
  has_password: sub.password !== null,
  client_id: sub.client_id,
  topics: sub.topics,
  qos: sub.qos,
  mapping: sub.mapping,
  enabled: sub.enabled,
  created_at: sub.created_at,
  status,
})

export function registerMqttAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'clock' | 'mqtt' | 'tenants'>,
): void {
  const view = async (sub: MqttSubscription) =>
    subscriptionView(sub, await s.mqtt.status.read(sub.id))
  const subscription = async (id: number) =>
    (await s.mqtt.repo.get(id)) ?? notFound('MQTT subscription', id)

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/mqtt-subscriptions',
    summary: 'Subscribe to MQTT topics of a broker (mapping or preset; the password is write-only)',
    body: MqttSubscriptionCreate,
    success: 201,
    cli: {
      name: 'mqtt:create',
      summary: 'Subscribe to MQTT topics of a broker (mapping or preset; docs/mqtt.md).',
      fields: [
        'broker=broker_url',
        'topics',
        'qos',
        'username',
        'password',
        'client_id',
        'mapping',
        'preset',
        'name',
        'enabled',
      ],
    },
    handler: async (req, { checkBody }) => {
      const ws = idParam(req, 'ws')
      if (!(await s.tenants.getWorkspace(ws))) notFound('workspace', ws)
      const b = checkBody()
      checkConnection(b)
      const mapping = compileMapping(mappingOrPreset(b)).def
      const id = await s.mqtt.repo.nextId()
      const sub = await s.mqtt.repo.save({
        id,
        workspace_id: ws,
        name: b.name ?? null,
        broker_url: b.broker_url,
        username: b.username ?? null,
        password: b.password ?? null,
        client_id: b.client_id ?? `meterflow-${ws}-${id}`,
        topics: b.topics,
        qos: b.qos ?? 1,
        mapping,
        enabled: b.enabled ?? true,
        created_at: new Date(s.clock.now()).toISOString(),
      })
      await s.mqtt.changed()
      return json(201, { data: await view(sub) })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/mqtt-subscriptions',
    summary: 'List MQTT subscriptions with their status',
    cli: {
      name: 'mqtt:list',
      summary: "List a workspace's MQTT subscriptions with their status.",
    },
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      if (!(await s.tenants.getWorkspace(ws))) notFound('workspace', ws)
      const subs = await s.mqtt.repo.list(ws)
      return json(200, { data: await Promise.all(subs.map(view)) })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/mqtt-subscriptions/:id',
    summary: 'Get an MQTT subscription with its status (connected, last message, errors, counts)',
    cli: {
      name: 'mqtt:show',
      summary: 'Show an MQTT subscription: connected, last message, errors, counts.',
      param: 'subscription',
    },
    handler: async (req) => json(200, { data: await view(await subscription(idParam(req, 'id'))) }),
  })

  adminRoute(router, s, {
    method: 'PATCH',
    path: '/mqtt-subscriptions/:id',
    summary: 'Change an MQTT subscription (its owner reconnects)',
    body: MqttSubscriptionPatch,
    cli: {
      name: 'mqtt:update',
      summary: 'Change an MQTT subscription (its owner reconnects).',
      param: 'subscription',
      fields: [
        'broker=broker_url',
        'topics',
        'qos',
        'username',
        'password',
        'mapping',
        'preset',
        'name',
        'enabled',
      ],
    },
    handler: async (req, { checkBody }) => {
      const cur = await subscription(idParam(req, 'id'))
      const b = checkBody()
      checkConnection(b)
      const next = { ...cur }
      if (b.mapping !== undefined || b.preset !== undefined)
        next.mapping = compileMapping(mappingOrPreset(b)).def
      if (b.name !== undefined) next.name = b.name
      if (b.broker_url !== undefined) next.broker_url = b.broker_url
      if (b.username !== undefined) next.username = b.username
      if (b.password !== undefined) next.password = b.password
      if (b.client_id !== undefined) next.client_id = b.client_id
      if (b.topics !== undefined) next.topics = b.topics
      if (b.qos !== undefined) next.qos = b.qos
      if (b.enabled !== undefined) next.enabled = b.enabled
      const saved = await s.mqtt.repo.save(next)
      await s.mqtt.changed()
      return json(200, { data: await view(saved) })
    },
  })

  adminRoute(router, s, {
    method: 'DELETE',
    path: '/mqtt-subscriptions/:id',
    summary: 'Delete an MQTT subscription (the persistent session stays on the broker)',
    cli: { name: 'mqtt:delete', summary: 'Delete an MQTT subscription.', param: 'subscription' },
    handler: async (req) => {
      const cur = await subscription(idParam(req, 'id'))
      await s.mqtt.repo.save(cur, true)
      await s.mqtt.changed()
      return json(200, { data: { id: cur.id, deleted: true } })
    },
  })
}
