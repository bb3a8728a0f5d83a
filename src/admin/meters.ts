// Operator API: meters (operator-api.md, "Meters"): lifecycle, profile confirmation, the
// wM-Bus key (never returned) and meter exchanges.
import { Type } from '@sinclair/typebox'
import { apiError, validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { meterView } from '../api/meter-view.js'
import { backfillMeter } from '../jobs/backfill.js'
import { replayQuarantine } from '../jobs/key-replay.js'
import type { AdminDeps } from './deps.js'
import { LIFECYCLE_STATES, type Meter } from '../store/meter-row.js'
import { insertExchange, listExchanges } from '../store/exchanges.js'
import { latestStatusesOf } from '../store/status.js'
import { parseIso } from '../webhooks/mapping.js'
import { adminRoute, idParam, notFound } from './guard.js'
import { registerQuarantineAdmin } from './quarantine.js'

export const LifecycleBody = Type.Object(
  { state: Type.Union(LIFECYCLE_STATES.map((s) => Type.Literal(s))) },
  { additionalProperties: false },
)
export const ProfileBody = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 64 }),
    version: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)
export const WmbusKeyBody = Type.Object(
  // 16 bytes (AES-128) or 8 bytes (DES: security modes 2 / 3, answered as unsupported)
  {
    key: Type.Union([Type.String({ pattern: '^([0-9a-fA-F]{32}|[0-9a-fA-F]{16})$' }), Type.Null()]),
  },
  { additionalProperties: false },
)
const NullableNumber = Type.Union([Type.Number(), Type.Null()])
export const ExchangeBody = Type.Object(
  {
    exchanged_at: Type.String({ minLength: 1, maxLength: 64 }),
    old_final_value: Type.Optional(NullableNumber),
    new_initial_value: Type.Optional(NullableNumber),
  },
  { additionalProperties: false },
)

/** The Meter response object of api-v1.md for one stored meter. */
export async function meterResponse(
  s: Omit<AdminDeps, 'auth' | 'scheduler' | 'events' | 'webhooks' | 'mqtt'>,
  m: Meter,
) {
  const profile = await s.profiles.get(m.workspace_id, m.profile_key, m.profile_version)
  const group = m.group_id !== null ? await s.groups.get(m.workspace_id, m.group_id) : null
  const status =
    (await latestStatusesOf(s.store.sql, m.workspace_id, [m.id], s.clock.now())).get(m.id) ?? null
  return meterView(m, profile, group, status)
}

export function registerMeterAdmin(
  router: Router,
  s: Omit<AdminDeps, 'auth' | 'scheduler' | 'events' | 'webhooks' | 'mqtt'>,
): void {
  const meter = async (id: number) => (await s.meters.findAnyById(id)) ?? notFound('meter', id)

  adminRoute(router, s, {
    method: 'PUT',
    path: '/meters/:meter/lifecycle',
    summary: 'Set lifecycle state',
    body: LifecycleBody,
    cli: {
      name: 'meters:lifecycle',
      summary: "Set a meter's lifecycle state (active, removed, archived, ...).",
    },
    handler: async (req, { checkBody }) => {
      const m = await meter(idParam(req, 'meter'))
      const b = checkBody()
      const next: Meter =
        b.state === m.lifecycle_state
          ? m
          : {
              ...m,
              lifecycle_state: b.state,
              lifecycle_changed_at: new Date(s.clock.now()).toISOString(),
            }
      if (next !== m && next.lifecycle_state === 'active') {
        // Back to operational: it counts against the plan limit like a new meter (402).
        const refused = await s.meters.reactivate(next, async () => {
          // The shared cache, as creations read it: this runs under the creation lock.
          const w = await s.tenants.workspace(m.workspace_id)
          return (await s.meters.atPlanLimit(m.workspace_id, w?.plan_meter_limit ?? null))
            ? ('rejected_plan_limit' as const)
            : null
        })
        if (refused)
          throw apiError(
            'PlanLimit',
            'The workspace is at its plan meter limit; the meter stays ' +
              `${m.lifecycle_state} until an owner upgrades or another meter is retired.`,
            { reason: refused },
          )
      } else if (next !== m) await s.meters.save(next)
      return json(200, { data: await meterResponse(s, next) })
    },
  })

  adminRoute(router, s, {
    method: 'PUT',
    path: '/meters/:meter/profile',
    summary: 'Assign and confirm a profile',
    body: ProfileBody,
    cli: { name: 'meters:profile', summary: 'Assign and confirm a device profile.' },
    handler: async (req, { checkBody }) => {
      const m = await meter(idParam(req, 'meter'))
      const b = checkBody()
      const latest = await s.profiles.get(m.workspace_id, b.key)
      if (!latest)
        throw validationError({ key: [`No profile with key ${b.key} in this workspace.`] })
      const p =
        b.version === undefined ? latest : await s.profiles.get(m.workspace_id, b.key, b.version)
      if (!p) throw validationError({ version: [`Profile ${b.key} has no version ${b.version}.`] })
      const next: Meter = {
        ...m,
        profile_key: p.key,
        profile_version: p.version,
        profile_needs_review: false,
      }
      await s.meters.save(next)
      return json(200, { data: await meterResponse(s, next) })
    },
  })

  adminRoute(router, s, {
    method: 'PUT',
    path: '/meters/:meter/wmbus-key',
    summary: 'Store or clear the wM-Bus key; storing one replays the quarantined telegrams',
    body: WmbusKeyBody,
    cli: {
      name: 'meters:wmbus-key',
      summary:
        'Store (32 hex chars) or clear ("null") the wM-Bus AES key; storing one replays the quarantined telegrams.',
    },
    handler: async (req, { checkBody }) => {
      const m = await meter(idParam(req, 'meter'))
      const b = checkBody()
      const next: Meter = { ...m, wmbus_key: b.key === null ? null : b.key.toLowerCase() }
      await s.meters.save(next)
      // telegrams quarantined for want of this key go through ingest now (jobs/key-replay.ts)
      const replay = next.wmbus_key ? await replayQuarantine(s, m.workspace_id, m.id) : null
      const data = { meter_id: m.id, has_key: next.wmbus_key !== null }
      return json(200, { data: replay ? { ...data, replay } : data })
    },
  })

  // What the key PUT above would replay (the CLI lists it next to meters:wmbus-key).
  registerQuarantineAdmin(router, s)

  adminRoute(router, s, {
    method: 'POST',
    path: '/meters/:meter/exchanges',
    summary: 'Record a meter exchange',
    body: ExchangeBody,
    success: 201,
    cli: { name: 'meters:exchange', summary: 'Record a meter exchange.' },
    handler: async (req, { checkBody }) => {
      const m = await meter(idParam(req, 'meter'))
      const b = checkBody()
      const t = parseIso(b.exchanged_at)
      if (t === null)
        throw validationError({
          exchanged_at: ['The exchanged_at field must be an ISO 8601 date-time.'],
        })
      const id = await insertExchange(s.store, {
        ws: m.workspace_id,
        meterId: m.id,
        exchangedAt: t,
        oldFinalValue: b.old_final_value ?? null,
        newInitialValue: b.new_initial_value ?? null,
        now: s.clock.now(),
      })
      // Meter actors that cache exchanges drop them (`<ws>:<meter>`).
      await s.coord.publish('exchanges', `${m.workspace_id}:${m.id}`).catch(() => {})
      // The stored readings around the exchange are flagged again at once (meter_exchange
      // placed, steps across it no longer saldo_decrease): the backfill for this meter.
      await backfillMeter(s, m)
      return json(201, {
        data: {
          id,
          meter_id: m.id,
          exchanged_at: new Date(t).toISOString(),
          old_final_value: b.old_final_value ?? null,
          new_initial_value: b.new_initial_value ?? null,
        },
      })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/meters/:meter/exchanges',
    summary: 'List meter exchanges',
    handler: async (req) => {
      const m = await meter(idParam(req, 'meter'))
      return json(200, { data: await listExchanges(s.store.sql, m.workspace_id, m.id) })
    },
  })
}
