// Meters master data (api-v1.md "GET/POST/PATCH/DELETE /api/v1/meters"): list, create (plan
// limit 402, warning object, meter.created), partial update, delete with confirmation and
// everything hanging off the meter (readings, rollup, status reports, exchanges).
import { Type, type TSchema } from '@sinclair/typebox'
import { apiError, FieldErrorCollector, validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import type { HttpRequest } from '../http/types.js'
import { json } from '../http/types.js'
import { rejectUnknown } from '../validate.js'
import { meterReadingSpan, purgeMeterData } from '../store/meter-data.js'
import { UNITS, familyOf, meterUnit } from '../domain/units.js'
import type { ApiDeps } from './deps.js'
import { newMeter, type Meter } from '../store/meter-row.js'
import { meterCreatedData } from '../events/catalog.js'
import { latestStatusesOf } from '../store/status.js'
import { meterView } from './meter-view.js'
import { tokenRoute } from './route.js'

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])
const UnitT = Type.Union(UNITS.map((u) => Type.Literal(u)))

const FIELDS = {
  meter_identifier: Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' }),
  name: Nullable(Type.String({ maxLength: 255 })),
  unit: Nullable(UnitT),
  group_id: Nullable(Type.Integer({ minimum: 1 })),
  rollover_max: Nullable(Type.Number({ exclusiveMinimum: 0 })),
  expected_interval_minutes: Nullable(Type.Integer({ minimum: 1, maximum: 527_040 })),
  pulse_weight: Nullable(Type.Number({ exclusiveMinimum: 0 })),
  pulse_unit: Nullable(UnitT),
}
const CREATE_KEYS = [...Object.keys(FIELDS), 'profile']
const PATCH_KEYS = [...Object.keys(FIELDS), 'display_unit']

export const CreateBody = Type.Object({
  ...FIELDS,
  meter_identifier: FIELDS.meter_identifier,
  name: Type.Optional(FIELDS.name),
  unit: Type.Optional(FIELDS.unit),
  group_id: Type.Optional(FIELDS.group_id),
  rollover_max: Type.Optional(FIELDS.rollover_max),
  expected_interval_minutes: Type.Optional(FIELDS.expected_interval_minutes),
  pulse_weight: Type.Optional(FIELDS.pulse_weight),
  pulse_unit: Type.Optional(FIELDS.pulse_unit),
  profile: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
})
export const PatchBody = Type.Object({
  meter_identifier: Type.Optional(FIELDS.meter_identifier),
  name: Type.Optional(FIELDS.name),
  unit: Type.Optional(FIELDS.unit),
  display_unit: Type.Optional(Nullable(UnitT)),
  group_id: Type.Optional(FIELDS.group_id),
  rollover_max: Type.Optional(FIELDS.rollover_max),
  expected_interval_minutes: Type.Optional(FIELDS.expected_interval_minutes),
  pulse_weight: Type.Optional(FIELDS.pulse_weight),
  pulse_unit: Type.Optional(FIELDS.pulse_unit),
})
export const DeleteBody = Type.Object({ confirm_meter_identifier: Type.String() })

/** Master-data writes: the scope, and the token's creator must hold groups.manage. */
export const WRITE = { scope: 'masterdata:write', groupsManage: true } as const

/** Fields whose change alters how already-stored readings are interpreted. */
const INTERPRETING = ['unit', 'rollover_max', 'pulse_weight', 'pulse_unit'] as const

export function warning(changed: string[]): { message: string; changed: string[] } | null {
  if (!changed.length) return null
  return {
    message:
      `Changing ${changed.join(', ')} alters how already-stored readings are interpreted. ` +
      'They are not recomputed automatically; run service:backfill-reading-quality.',
    changed,
  }
}

function body(req: HttpRequest): Record<string, unknown> {
  const b = req.json()
  if (b === null || typeof b !== 'object' || Array.isArray(b))
    throw validationError({ body: ['The body must be a JSON object.'] })
  return b as Record<string, unknown>
}

/** Path id: a positive integer, else 422 naming the parameter. */
export function pathId(req: HttpRequest, name: string): number {
  const raw = req.params[name] ?? ''
  if (!/^[0-9]{1,15}$/.test(raw) || Number(raw) < 1)
    throw validationError({ [name]: [`The ${name} path parameter must be a positive integer.`] })
  return Number(raw)
}

export async function viewMeters(
  s: Pick<ApiDeps, 'clock' | 'groups' | 'meters' | 'profiles' | 'store'>,
  ws: number,
  meters: Meter[],
  /** The meters were created by this very call: no status report can name them yet. */
  opts: { justCreated?: boolean } = {},
) {
  const one = meters.length === 1 ? meters[0]! : null
  // One meter needs its own group at most, a list every group of the workspace: at a
  // create per call, the list and the status look-up were two of its three queries.
  const [groups, statuses] = await Promise.all([
    one
      ? one.group_id === null
        ? []
        : s.groups.get(ws, one.group_id).then((g) => [g])
      : s.groups.list(ws),
    opts.justCreated
      ? new Map<number, never>()
      : latestStatusesOf(
          s.store.sql,
          ws,
          meters.map((m) => m.id),
          s.clock.now(),
        ),
  ])
  const gById = new Map(groups.flatMap((g) => (g ? [[g.id, g] as const] : [])))
  return Promise.all(
    meters.map(async (m) =>
      meterView(
        m,
        await s.profiles.get(ws, m.profile_key, m.profile_version),
        m.group_id !== null ? (gById.get(m.group_id) ?? null) : null,
        statuses.get(m.id) ?? null,
      ),
    ),
  )
}

export function registerMeters(
  router: Router,
  s: Pick<
    ApiDeps,
    'auth' | 'clock' | 'groups' | 'meters' | 'outbox' | 'profiles' | 'store' | 'tenants'
  >,
): void {
  tokenRoute(router, s.auth, {
    method: 'GET',
    path: '/api/v1/meters',
    summary: 'List meters',
    scope: 'data:read',
    response: Type.Object({ data: Type.Unknown() }),
    handler: async (_req, { workspaceId: ws }) => {
      return json(200, { data: await viewMeters(s, ws, await s.meters.list(ws)) })
    },
  })

  tokenRoute(router, s.auth, {
    method: 'POST',
    path: '/api/v1/meters',
    summary: 'Create a meter',
    ...WRITE,
    body: CreateBody,
    success: 201,
    handler: async (req, { workspaceId: ws }, { checkBody }) => {
      const raw = body(req)
      const unknown = rejectUnknown(raw, CREATE_KEYS)
      if ('display_unit' in raw)
        unknown.display_unit = ['The display_unit field can only be set with PATCH.']
      const errs = new FieldErrorCollector()
      for (const [k, v] of Object.entries(unknown)) for (const m of v) errs.add(k, m)
      errs.throwIfAny()
      const b = checkBody(raw)
      if (((b.pulse_weight ?? null) === null) !== ((b.pulse_unit ?? null) === null)) {
        const k = b.pulse_weight == null ? 'pulse_weight' : 'pulse_unit'
        errs.add(k, 'The pulse_weight and pulse_unit fields must be set together or not at all.')
      }
      if (b.group_id != null && !(await s.groups.get(ws, b.group_id)))
        errs.add('group_id', 'The selected group_id is invalid.')
      let profile = null
      if (b.profile !== undefined) {
        profile = await s.profiles.get(ws, b.profile)
        if (!profile) errs.add('profile', 'The selected profile is invalid.')
      }
      if (await s.meters.byIdentifier(ws, b.meter_identifier))
        errs.add('meter_identifier', 'The meter_identifier has already been taken.')
      errs.throwIfAny()

      const fields = newMeter(b.meter_identifier, {
        name: b.name ?? null,
        unit: b.unit ?? null,
        group_id: b.group_id ?? null,
        rollover_max: b.rollover_max ?? null,
        expected_interval_minutes: b.expected_interval_minutes ?? null,
        pulse_weight: b.pulse_weight ?? null,
        pulse_unit: b.pulse_unit ?? null,
        profile_key: profile?.key ?? 'generic',
        profile_version: profile?.version ?? 1,
        profile_needs_review: profile === null,
      })
      const res = await s.meters.create(ws, fields, async (pending) => {
        // The shared cache, as ingest's admission reads it: a FINAL look-up per call, held
        // under the workspace's creation lock, put every create behind the one before.
        const w = await s.tenants.workspace(ws)
        return (await s.meters.atPlanLimit(ws, w?.plan_meter_limit ?? null, pending))
          ? ('rejected_plan_limit' as const)
          : null
      })
      if ('refused' in res)
        throw apiError(
          'PlanLimit',
          'The workspace is at its plan meter limit; an owner must upgrade.',
          {
            reason: res.refused,
          },
        )
      if (!res.created)
        throw validationError({
          meter_identifier: ['The meter_identifier has already been taken.'],
        })
      const m = res.meter
      await s.outbox.emit(ws, 'meter.created', meterCreatedData(m))
      const changed = INTERPRETING.filter((k) => b[k] != null)
      const [view] = await viewMeters(s, ws, [m], { justCreated: true })
      return json(201, { data: view, warning: warning([...changed]) })
    },
  })

  tokenRoute(router, s.auth, {
    method: 'PATCH',
    path: '/api/v1/meters/:meter',
    summary: 'Update a meter',
    ...WRITE,
    body: PatchBody,
    handler: async (req, { workspaceId: ws }, { checkBody }) => {
      const id = pathId(req, 'meter')
      const m = await s.meters.byId(ws, id)
      if (!m) throw apiError('NotFound', `Meter ${id} not found.`)
      const raw = body(req)
      const unknown = rejectUnknown(raw, PATCH_KEYS)
      if (Object.keys(unknown).length) throw validationError(unknown)
      const b = checkBody(raw)
      const errs = new FieldErrorCollector()
      const next: Meter = { ...m }
      for (const k of PATCH_KEYS) if (k in b) (next as any)[k] = (b as any)[k]
      if ((next.pulse_weight === null) !== (next.pulse_unit === null)) {
        const k = 'pulse_weight' in b ? 'pulse_weight' : 'pulse_unit'
        errs.add(k, 'The pulse_weight and pulse_unit fields must be set together or not at all.')
      }
      // The meter's own family: its unit, or a pulse meter's pulse_unit (meterUnit).
      const family = familyOf(meterUnit(next))
      if (next.display_unit !== null && familyOf(next.display_unit) !== family) {
        if ('display_unit' in b)
          errs.add(
            'display_unit',
            family === null
              ? 'The display_unit field needs a meter unit (or pulse_unit) to belong to.'
              : `The display_unit must belong to the ${family} family of the meter's unit.`,
          )
        else next.display_unit = null // unit moved to another family: back to the canonical unit
      }
      if ('group_id' in b && b.group_id != null && !(await s.groups.get(ws, b.group_id)))
        errs.add('group_id', 'The selected group_id is invalid.')
      if (next.meter_identifier !== m.meter_identifier) {
        const other = await s.meters.byIdentifier(ws, next.meter_identifier)
        if (other && other.id !== m.id)
          errs.add('meter_identifier', 'The meter_identifier has already been taken.')
      }
      errs.throwIfAny()
      const changed = INTERPRETING.filter((k) => next[k] !== m[k])
      await s.meters.save(next)
      const [view] = await viewMeters(s, ws, [next])
      return json(200, { data: view, warning: warning([...changed]) })
    },
  })

  tokenRoute(router, s.auth, {
    method: 'DELETE',
    path: '/api/v1/meters/:meter',
    summary: 'Delete a meter',
    ...WRITE,
    body: DeleteBody,
    handler: async (req, { workspaceId: ws }, { checkBody }) => {
      const id = pathId(req, 'meter')
      const m = await s.meters.byId(ws, id)
      if (!m) throw apiError('NotFound', `Meter ${id} not found.`)
      if (req.body.length === 0)
        throw validationError({
          confirm_meter_identifier: ['The confirm_meter_identifier field is required.'],
        })
      const b = checkBody(body(req))
      if (b.confirm_meter_identifier !== m.meter_identifier)
        throw validationError({
          confirm_meter_identifier: [
            "The confirm_meter_identifier must equal the meter's own identifier.",
          ],
        })
      const span = await meterReadingSpan(s.store, ws, m.id)
      await s.meters.delete(m)
      await purgeMeterData(s.store, ws, m.id)
      return json(200, {
        data: {
          deleted: true,
          id: m.id,
          meter_identifier: m.meter_identifier,
          readings_deleted: span.count,
          readings_from: span.from,
          readings_to: span.to,
        },
      })
    },
  })
}
