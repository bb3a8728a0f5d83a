// Meter groups (api-v1.md "/api/v1/meterGroups"): a tree with materialised paths. Flat list
// by path with meter_count (meters filed directly), subtree filter, create, rename/move
// (whole subtree's paths rewritten) and delete of empty groups; 409 GroupConflict for
// sibling name clashes, moves into the own subtree and non-empty deletes.
import { Type } from '@sinclair/typebox'
import { apiError, FieldErrorCollector, validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import type { HttpRequest } from '../http/types.js'
import { json } from '../http/types.js'
import { rejectUnknown } from '../validate.js'
import { intParam } from '../query/params.js'
import { Exclusive, type LeaseWait } from '../coord/exclusive.js'
import type { ApiDeps } from './deps.js'
import type { MeterGroup } from '../store/groups.js'
import { pathId, WRITE } from './meters.js'
import { tokenRoute } from './route.js'

const Name = Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' })
const ParentId = Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])
export const CreateBody = Type.Object({ name: Name, parent_id: Type.Optional(ParentId) })
export const PatchBody = Type.Object({
  name: Type.Optional(Name),
  parent_id: Type.Optional(ParentId),
})

function objectBody(req: HttpRequest, allowed: string[]): Record<string, unknown> {
  const b = req.body.length === 0 ? {} : req.json()
  if (b === null || typeof b !== 'object' || Array.isArray(b))
    throw validationError({ body: ['The body must be a JSON object.'] })
  const unknown = rejectUnknown(b as Record<string, unknown>, allowed)
  if (Object.keys(unknown).length) throw validationError(unknown)
  return b as Record<string, unknown>
}

/** Group mutations of one workspace run one at a time (here, and under a lease across instances). */
const GROUP_LOCK: LeaseWait = {
  ttlMs: 10_000,
  pollMs: 10,
  attempts: 500,
  timeout: () => new Error('timed out waiting for the group lock'),
}

export function registerGroups(
  router: Router,
  s: Pick<ApiDeps, 'auth' | 'coord' | 'groups' | 'meters'>,
): void {
  const groupLock = new Exclusive(s.coord, GROUP_LOCK)
  const counts = async (ws: number) => {
    const c = new Map<number, number>()
    for (const m of await s.meters.list(ws))
      if (m.group_id !== null) c.set(m.group_id, (c.get(m.group_id) ?? 0) + 1)
    return c
  }
  const view = (g: MeterGroup, c: Map<number, number>) => ({
    id: g.id,
    name: g.name,
    parent_id: g.parent_id,
    path: g.path,
    meter_count: c.get(g.id) ?? 0,
  })
  const sortByPath = (a: MeterGroup, b: MeterGroup) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0
  const clash = (all: MeterGroup[], parent: number | null, name: string, self?: number) =>
    all.some((g) => g.parent_id === parent && g.name === name && g.id !== self)

  tokenRoute(router, s.auth, {
    method: 'GET',
    path: '/api/v1/meterGroups',
    summary: 'List meter groups (flat, by path)',
    scope: 'data:read',
    query: [{ name: 'group_id', schema: Type.Integer() }],
    handler: async (req, { workspaceId: ws }) => {
      const errs = new FieldErrorCollector()
      const groupId = intParam(req.query, 'group_id', errs)
      errs.throwIfAny()
      let all = (await s.groups.list(ws)).sort(sortByPath)
      if (groupId !== undefined) {
        const g = all.find((x) => x.id === groupId)
        if (!g) throw validationError({ group_id: ['The selected group_id is invalid.'] })
        all = all.filter((x) => x.path.startsWith(g.path))
      }
      const c = await counts(ws)
      return json(200, { data: all.map((g) => view(g, c)) })
    },
  })

  tokenRoute(router, s.auth, {
    method: 'POST',
    path: '/api/v1/meterGroups',
    summary: 'Create a group',
    ...WRITE,
    body: CreateBody,
    success: 201,
    handler: async (req, { workspaceId: ws }, { checkBody }) => {
      const b = checkBody(objectBody(req, ['name', 'parent_id']))
      return groupLock.run(`groups:${ws}`, async () => {
        const all = await s.groups.list(ws)
        const parentId = b.parent_id ?? null
        const parent = parentId === null ? null : all.find((g) => g.id === parentId)
        if (parent === undefined)
          throw validationError({ parent_id: ['The selected parent_id is invalid.'] })
        if (clash(all, parentId, b.name))
          throw apiError('GroupConflict', `A sibling group named "${b.name}" already exists.`)
        const id = await s.groups.nextId()
        const g: MeterGroup = {
          id,
          workspace_id: ws,
          name: b.name,
          parent_id: parentId,
          path: `${parent?.path ?? '/'}${id}/`,
        }
        await s.groups.save([g])
        return json(201, { data: view(g, new Map()) })
      })
    },
  })

  tokenRoute(router, s.auth, {
    method: 'PATCH',
    path: '/api/v1/meterGroups/:group',
    summary: 'Rename or move a group',
    ...WRITE,
    body: PatchBody,
    handler: async (req, { workspaceId: ws }, { checkBody }) => {
      const id = pathId(req, 'group')
      const b = checkBody(objectBody(req, ['name', 'parent_id']))
      return groupLock.run(`groups:${ws}`, async () => {
        const all = await s.groups.list(ws)
        const g = all.find((x) => x.id === id)
        if (!g) throw apiError('NotFound', `Meter group ${id} not found.`)
        const name = b.name ?? g.name
        const parentId = 'parent_id' in b ? (b.parent_id ?? null) : g.parent_id
        let changed: MeterGroup[] = []
        if (parentId !== g.parent_id) {
          const parent = parentId === null ? null : all.find((x) => x.id === parentId)
          if (parent === undefined)
            throw validationError({ parent_id: ['The selected parent_id is invalid.'] })
          if (parent && parent.path.startsWith(g.path))
            throw apiError('GroupConflict', 'A group cannot be moved into its own subtree.')
          if (clash(all, parentId, name, g.id))
            throw apiError('GroupConflict', `A sibling group named "${name}" already exists.`)
          const newPath = `${parent?.path ?? '/'}${g.id}/`
          changed = all
            .filter((x) => x.path.startsWith(g.path))
            .map((x) => ({ ...x, path: newPath + x.path.slice(g.path.length) }))
          changed = changed.map((x) => (x.id === g.id ? { ...x, name, parent_id: parentId } : x))
        } else {
          if (name !== g.name && clash(all, parentId, name, g.id))
            throw apiError('GroupConflict', `A sibling group named "${name}" already exists.`)
          changed = [{ ...g, name }]
        }
        await s.groups.save(changed)
        const updated = changed.find((x) => x.id === g.id)!
        return json(200, { data: view(updated, await counts(ws)) })
      })
    },
  })

  tokenRoute(router, s.auth, {
    method: 'DELETE',
    path: '/api/v1/meterGroups/:group',
    summary: 'Delete an empty group',
    ...WRITE,
    handler: async (req, { workspaceId: ws }) => {
      const id = pathId(req, 'group')
      return groupLock.run(`groups:${ws}`, async () => {
        const all = await s.groups.list(ws)
        const g = all.find((x) => x.id === id)
        if (!g) throw apiError('NotFound', `Meter group ${id} not found.`)
        if (all.some((x) => x.parent_id === g.id))
          throw apiError('GroupConflict', 'The group still contains subgroups.')
        if ((await counts(ws)).get(g.id))
          throw apiError('GroupConflict', 'The group still contains meters.')
        await s.groups.delete(g)
        return json(200, { data: { deleted: true, id: g.id } })
      })
    },
  })
}
