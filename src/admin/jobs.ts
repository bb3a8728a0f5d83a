// Operator API: jobs (operator-api.md, "Scheduler and jobs").
import { Type } from '@sinclair/typebox'
import { validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { backfillReadingQuality } from '../jobs/backfill.js'
import type { AdminDeps } from './deps.js'
import { adminRoute } from './guard.js'

export const BackfillBody = Type.Object(
  {
    workspace_id: Type.Optional(Type.Integer({ minimum: 1 })),
    meter_id: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)

export function registerJobAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'coord' | 'meters' | 'store' | 'tenants'>,
): void {
  adminRoute(router, s, {
    method: 'POST',
    path: '/jobs/backfill-reading-quality',
    summary: 'Recompute canonical values and quality flags',
    body: BackfillBody,
    cli: {
      name: 'service:backfill-reading-quality',
      summary: 'Recompute canonical values and quality flags of stored readings.',
      fields: ['workspace=workspace_id', 'meter=meter_id'],
    },
    handler: async (req, { checkBody }) => {
      const b = req.body.length ? checkBody() : {}
      if (b.workspace_id !== undefined && !(await s.tenants.getWorkspace(b.workspace_id)))
        throw validationError({ workspace_id: [`No workspace ${b.workspace_id}.`] })
      if (b.meter_id !== undefined) {
        const m = await s.meters.findAnyById(b.meter_id)
        if (!m || (b.workspace_id !== undefined && m.workspace_id !== b.workspace_id))
          throw validationError({
            meter_id: [
              `No meter ${b.meter_id}${b.workspace_id !== undefined ? ' in this workspace' : ''}.`,
            ],
          })
      }
      const out = await backfillReadingQuality(s, {
        workspaceId: b.workspace_id,
        meterId: b.meter_id,
      })
      return json(200, { data: out })
    },
  })
}
