// Operator API: device profiles (operator-api.md, "Device profiles"). Built-ins plus the
// workspace's own; posting an existing key stores version + 1. A binary `decoder` is
// checked with the decoder's own layout validation.
import { Type } from '@sinclair/typebox'
import { FieldErrorCollector } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { validateLayout } from '../decode/frame-layout.js'
import type { AdminDeps } from './deps.js'
import { BUILTIN_PROFILES, type Profile } from '../store/profiles.js'
import { CANONICAL_STATUSES } from '../ingest/statuses.js'
import { adminRoute, idParam, notFound } from './guard.js'

export { CANONICAL_STATUSES }

export const ProfileCreate = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    kind: Type.Union([Type.Literal('consumption'), Type.Literal('saldo')]),
    unit: Type.Union([
      Type.Literal('kwh'),
      Type.Literal('wh'),
      Type.Literal('m3'),
      Type.Literal('l'),
    ]),
    decoder: Type.Optional(Type.Union([Type.Unknown(), Type.Null()])),
    status_map: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
)

export const profileView = (p: Profile) => ({
  key: p.key,
  version: p.version,
  name: p.name,
  kind: p.kind,
  unit: p.unit,
  decoder: p.decoder,
  status_map: p.status_map,
  builtin: p.builtin,
})

export function registerProfileAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'profiles' | 'tenants'>,
): void {
  const workspace = async (ws: number) =>
    (await s.tenants.getWorkspace(ws)) ?? notFound('workspace', ws)

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/profiles',
    summary: 'Built-in and workspace profiles',
    cli: { name: 'profiles:list', summary: 'Built-in and workspace device profiles.' },
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      await workspace(ws)
      // One entry per key: its newest version (every version stays assignable by number).
      const newest = new Map<string, Profile>()
      for (const p of await s.profiles.all(ws)) {
        const prev = newest.get(p.key)
        if (!prev || p.version > prev.version) newest.set(p.key, p)
      }
      return json(200, { data: [...newest.values()].map(profileView) })
    },
  })

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/profiles',
    summary: 'Create a profile or a new version of one',
    body: ProfileCreate,
    success: 201,
    cli: {
      name: 'profiles:create',
      summary: 'Create a device profile (an existing key makes a new version).',
    },
    handler: async (req, { checkBody }) => {
      const ws = idParam(req, 'ws')
      await workspace(ws)
      const b = checkBody()
      const errs = new FieldErrorCollector()
      if (BUILTIN_PROFILES.some((p) => p.key === b.key))
        errs.add('key', `The key ${b.key} is a built-in profile and cannot be redefined.`)
      let decoder: unknown = null
      if (b.decoder !== undefined && b.decoder !== null) {
        const v = validateLayout(b.decoder)
        if (v.ok) decoder = v.layout
        else for (const [k, msg] of Object.entries(v.errors)) errs.add(k, `${k}: ${msg}.`)
      }
      let statusMap: Record<string, string> | null = null
      if (b.status_map !== undefined && b.status_map !== null) {
        if (typeof b.status_map !== 'object' || Array.isArray(b.status_map))
          errs.add(
            'status_map',
            'The status_map field must be an object mapping raw flags to canonical codes.',
          )
        else {
          statusMap = b.status_map as Record<string, string>
          for (const [raw, code] of Object.entries(statusMap))
            if (
              typeof code !== 'string' ||
              !(CANONICAL_STATUSES as readonly string[]).includes(code)
            )
              errs.add(
                `status_map.${raw}`,
                `The status_map.${raw} value must be one of ${CANONICAL_STATUSES.join(', ')}.`,
              )
        }
      }
      errs.throwIfAny()
      const p = await s.profiles.create(ws, {
        key: b.key,
        name: b.name,
        kind: b.kind,
        unit: b.unit,
        decoder,
        status_map: statusMap,
      })
      return json(201, {
        data: { ...profileView(p), key: p.key, version: p.version, name: p.name },
      })
    },
  })
}
