// Operator API: scheduled transfers (operator-api.md, "Imports and transfers").
import { Type } from '@sinclair/typebox'
import { validationError } from '../errors.js'
import { isPrivateTarget } from '../events/targets.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { parseCron, TransferRepo, transferView } from '../scheduler/transfers.js'
import type { AdminDeps } from './deps.js'
import { adminRoute, idParam, notFound } from './guard.js'

export const TransferCreate = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2000 }),
    cron: Type.String({ minLength: 1, maxLength: 200 }),
    group_id: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  },
  { additionalProperties: false },
)

export function registerTransferAdmin(
  router: Router,
  s: Pick<
    AdminDeps,
    'adminToken' | 'clock' | 'config' | 'groups' | 'meters' | 'outbox' | 'store' | 'tenants'
  >,
): void {
  const repo = new TransferRepo(s)
  const workspace = async (ws: number) =>
    (await s.tenants.getWorkspace(ws)) ?? notFound('workspace', ws)

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/transfers',
    summary: 'Schedule a daily transfer',
    body: TransferCreate,
    success: 201,
    cli: {
      name: 'transfers:create',
      summary: 'Schedule a daily-consumption transfer to a URL (cron expression).',
      fields: ['url', 'cron', 'group=group_id:int'],
    },
    handler: async (req, { checkBody }) => {
      const ws = idParam(req, 'ws')
      await workspace(ws)
      const b = checkBody()
      let url: URL | null = null
      try {
        url = new URL(b.url)
      } catch {
        url = null
      }
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
        throw validationError({ url: ['The url field must be an http or https URL.'] })
      // One rule for every outbound request: as for event subscriptions (checked again at send).
      if (s.config.EVENT_BLOCK_PRIVATE_TARGETS && (await isPrivateTarget(b.url)))
        throw validationError({
          url: ['The url field must not point to a private or loopback address.'],
        })
      try {
        parseCron(b.cron)
      } catch (e) {
        throw validationError({
          cron: [`The cron field is not a valid cron pattern: ${(e as Error).message}`],
        })
      }
      const groupId = b.group_id ?? null
      if (groupId !== null && !(await s.groups.get(ws, groupId)))
        throw validationError({ group_id: [`No group ${groupId} in this workspace.`] })
      const t = {
        id: await s.store.nextId('transfers'),
        workspace_id: ws,
        url: b.url,
        cron: b.cron,
        group_id: groupId,
        last_run_at: null,
        last_status: null,
        created_at: new Date(s.clock.now()).toISOString(),
      }
      await repo.save(t)
      return json(201, { data: transferView(t) })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/transfers',
    summary: 'List transfers',
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      await workspace(ws)
      return json(200, { data: (await repo.list(ws)).map(transferView) })
    },
  })

  adminRoute(router, s, {
    method: 'DELETE',
    path: '/transfers/:id',
    summary: 'Delete a transfer',
    handler: async (req) => {
      const id = idParam(req, 'id')
      const t = (await repo.get(id)) ?? notFound('transfer', id)
      await repo.save(t, true)
      return json(200, { data: { id, deleted: true } })
    },
  })
}
