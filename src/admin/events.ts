// Operator API: event subscriptions, their delivery log, manual retry and the workspace's
// mail outbox (operator-api.md "Event subscriptions"). The signing secret appears in the
// create and rotate responses only.
import { Type } from '@sinclair/typebox'
import { apiError, FieldErrorCollector, validationError } from '../errors.js'
import { EVENT_NAMES } from '../events/catalog.js'
import type { Delivery, Subscription } from '../store/events.js'
import { newSigningSecret } from '../events/signing.js'

import { isPrivateTarget, urlProblem } from '../events/targets.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { rejectUnknown } from '../validate.js'
import type { AdminDeps } from './deps.js'
import { adminRoute, idParam, notFound } from './guard.js'

const CATALOG: readonly string[] = EVENT_NAMES

// What the bodies look like, for the route contracts; readFields checks them by hand so that
// every problem (a URL on a private network, unknown event names) is a message of its own.
const SubscriptionCreate = Type.Object(
  {
    url: Type.String(),
    events: Type.Array(Type.String(), { description: 'catalog names or ["*"]' }),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
const SubscriptionPatch = Type.Partial(SubscriptionCreate)

function publicSubscription(sub: Subscription) {
  return { id: sub.id, url: sub.url, events: sub.events, enabled: sub.enabled }
}

function publicDelivery(d: Delivery) {
  return {
    id: d.id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    next_attempt_at: d.next_attempt_at === null ? null : new Date(d.next_attempt_at).toISOString(),
    created_at: new Date(d.created_at).toISOString(),
  }
}

interface SubscriptionFields {
  url?: string
  events?: string[]
  enabled?: boolean
}

/** Checks a create or patch body; every problem is a 422 keyed by its field. */
async function readFields(
  s: Pick<AdminDeps, 'adminToken' | 'clock' | 'config' | 'events' | 'tenants'>,
  body: unknown,
  create: boolean,
): Promise<SubscriptionFields> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw validationError({ body: ['The body must be a JSON object.'] })
  const b = body as Record<string, unknown>
  const errors = new FieldErrorCollector()
  for (const [k, m] of Object.entries(rejectUnknown(b, ['url', 'events', 'enabled'])))
    for (const msg of m) errors.add(k, msg)
  const out: SubscriptionFields = {}

  if (create || b.url !== undefined) {
    const problem = urlProblem(b.url)
    if (problem) errors.add('url', problem)
    else if (s.config.EVENT_BLOCK_PRIVATE_TARGETS && (await isPrivateTarget(b.url as string)))
      errors.add('url', 'The url field must not point to a private or loopback address.')
    else out.url = b.url as string
  }

  if (create || b.events !== undefined) {
    if (!Array.isArray(b.events) || b.events.length === 0)
      errors.add('events', 'The events field must be a non-empty array of event names, or ["*"].')
    else {
      const bad = b.events.filter(
        (e) => typeof e !== 'string' || (e !== '*' && !CATALOG.includes(e)),
      )
      if (bad.length)
        errors.add(
          'events',
          `The events field holds unknown event names (${bad.map((e) => JSON.stringify(e)).join(', ')}); ` +
            `use names of the catalog (${CATALOG.join(', ')}) or "*".`,
        )
      else out.events = [...new Set(b.events as string[])]
    }
  }

  if (b.enabled !== undefined) {
    if (typeof b.enabled !== 'boolean')
      errors.add('enabled', 'The enabled field must be true or false.')
    else out.enabled = b.enabled
  }
  errors.throwIfAny()
  return out
}

export function registerEventAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'clock' | 'config' | 'events' | 'tenants'>,
): void {
  const workspace = async (id: number) =>
    (await s.tenants.getWorkspace(id)) ?? notFound('workspace', id)
  const subscription = async (id: number) =>
    (await s.events.repo.getSubscription(id)) ?? notFound('event subscription', id)

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/event-subscriptions',
    summary: 'Subscribe a URL to events (signing secret shown here)',
    body: SubscriptionCreate,
    bodyByHand: true,
    success: 201,
    cli: {
      name: 'subscriptions:create',
      summary: 'Subscribe a URL to events (--events "*" for all).',
    },
    handler: async (req) => {
      const w = await workspace(idParam(req, 'ws'))
      const f = await readFields(s, req.json(), true)
      const { repo, outbox } = s.events
      const sub: Subscription = {
        id: await repo.nextSubscriptionId(),
        workspace_id: w.id,
        url: f.url!,
        events: f.events!,
        enabled: f.enabled ?? true,
        signing_secret: newSigningSecret(),
        consecutive_failures: 0,
        created_at: s.clock.now(),
      }
      await repo.saveSubscription(sub)
      await outbox.invalidate()
      return json(201, { data: { ...publicSubscription(sub), signing_secret: sub.signing_secret } })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/event-subscriptions',
    summary: 'List event subscriptions',
    handler: async (req) => {
      const w = await workspace(idParam(req, 'ws'))
      return json(200, {
        data: (await s.events.repo.listSubscriptions(w.id)).map(publicSubscription),
      })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/event-subscriptions/:id',
    summary: 'Get an event subscription',
    handler: async (req) =>
      json(200, { data: publicSubscription(await subscription(idParam(req, 'id'))) }),
  })

  adminRoute(router, s, {
    method: 'PATCH',
    path: '/event-subscriptions/:id',
    summary: 'Change an event subscription',
    body: SubscriptionPatch,
    bodyByHand: true,
    cli: {
      name: 'subscriptions:update',
      summary: 'Change URL, events or enabled.',
      param: 'subscription',
    },
    handler: async (req) => {
      const sub = await subscription(idParam(req, 'id'))
      const f = await readFields(s, req.json(), false)
      const next: Subscription = { ...sub, ...f }
      // Switching a target on again starts its count of exhausted deliveries afresh.
      if (next.enabled && !sub.enabled) next.consecutive_failures = 0
      const { repo, outbox, engine } = s.events
      await repo.saveSubscription(next)
      await outbox.invalidate()
      if (next.enabled && !sub.enabled) engine.wake()
      return json(200, { data: publicSubscription(next) })
    },
  })

  adminRoute(router, s, {
    method: 'POST',
    path: '/event-subscriptions/:id/rotate-secret',
    summary: 'New signing secret; the old one stops at once',
    cli: {
      name: 'subscriptions:rotate-secret',
      summary: 'Issue a new signing secret (the old one stops at once).',
      param: 'subscription',
    },
    handler: async (req) => {
      const sub = await subscription(idParam(req, 'id'))
      const next = { ...sub, signing_secret: newSigningSecret() }
      // The engine reads the subscription before every attempt: the next one signs with this.
      await s.events.repo.saveSubscription(next)
      await s.events.outbox.invalidate()
      return json(200, { data: { signing_secret: next.signing_secret } })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/event-subscriptions/:id/deliveries',
    summary: 'Deliveries, newest first',
    cli: {
      name: 'subscriptions:deliveries',
      summary: "List a subscription's deliveries, newest first.",
      param: 'subscription',
    },
    handler: async (req) => {
      const sub = await subscription(idParam(req, 'id'))
      const raw = req.query.get('limit')
      let limit = 100
      if (raw !== null) {
        if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000)
          throw validationError({ limit: ['The limit field must be an integer from 1 to 1000.'] })
        limit = Number(raw)
      }
      const rows = await s.events.repo.listDeliveries(sub.id, limit)
      return json(200, { data: rows.map(publicDelivery) })
    },
  })

  adminRoute(router, s, {
    method: 'POST',
    path: '/deliveries/:id/retry',
    summary: 'Retry a delivery (same id)',
    success: 202,
    cli: {
      name: 'deliveries:retry',
      summary: 'Retry a delivery now (keeps its id).',
      param: 'delivery:string',
    },
    handler: async (req) => {
      const id = req.params.id ?? ''
      const { repo, engine } = s.events
      const d = /^[0-9a-f-]{36}$/i.test(id) ? await repo.getDelivery(id.toLowerCase()) : null
      if (!d) notFound('delivery', id)
      // A delivered event is not sent again (the receiver has it): 409, nothing scheduled.
      if (d.status === 'delivered')
        throw apiError(
          'Conflict',
          `Delivery ${d.id} was already delivered; there is nothing to retry.`,
        )
      // Same delivery id, same body, a fresh series of five attempts starting now.
      const next: Delivery = {
        ...d,
        status: 'pending',
        attempts: 0,
        exhausted: false,
        next_attempt_at: s.clock.now(),
      }
      await repo.saveDeliveries([next])
      engine.wake()
      return json(202, { data: publicDelivery(next) })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/outbox',
    summary: 'Mails the workspace sent',
    cli: { name: 'outbox:list', summary: 'Every mail the workspace sent, newest first.' },
    handler: async (req) => {
      const w = await workspace(idParam(req, 'ws'))
      const mails = await s.events.repo.listMails(w.id)
      return json(200, {
        data: mails.map((m) => ({
          to: m.to,
          subject: m.subject,
          body: m.body,
          created_at: new Date(m.created_at).toISOString(),
        })),
      })
    },
  })
}
