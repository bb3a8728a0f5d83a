// POST /api/v1/reportData: a batch of readings through the ingest pipeline. 201 when at
// least one reading was stored, 200 when nothing new was (all duplicates, or all refused).
import { Type } from '@sinclair/typebox'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { validationError } from '../errors.js'
import { GenericItem, PayloadItem } from '../ingest/schema.js'
import type { ApiDeps } from './deps.js'
import { tokenRoute } from './route.js'

const ItemResult = Type.Object({
  meter: Type.String(),
  kind: Type.Union([Type.Literal('consumption'), Type.Literal('saldo')]),
  recorded_at: Type.String(),
  status: Type.Union(
    [
      'created',
      'duplicate',
      'rejected_provision_limit',
      'rejected_plan_limit',
      'rejected_unconfigured',
      'rejected_undecodable',
      'rejected_meter_retired',
      'rejected_unmappable',
    ].map((s) => Type.Literal(s)),
  ),
  reason: Type.Optional(Type.String()),
})
/** The answer of reportData, and of webhook ingest. */
export const ReportResult = Type.Object({
  accepted: Type.Integer(),
  duplicates: Type.Integer(),
  rejected: Type.Integer(),
  results: Type.Array(ItemResult),
})
// Described for the contract; the pipeline checks every item itself (ingest/schema.ts).
const ReportRequest = Type.Object({
  readings: Type.Array(Type.Union([GenericItem, PayloadItem]), {
    description:
      'The whole batch is validated before anything is stored (422 naming readings.<i>.<field>).',
  }),
})

export function registerReport(router: Router, s: Pick<ApiDeps, 'auth' | 'ingest'>): void {
  tokenRoute(router, s.auth, {
    method: 'POST',
    path: '/api/v1/reportData',
    summary: 'Report a batch of readings (201 when one was stored, 200 otherwise)',
    scope: 'data:report',
    body: ReportRequest,
    success: 201,
    response: ReportResult,
    handler: async (req, p) => {
      const body = req.json<{ readings?: unknown }>()
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw validationError({ body: ['The body must be an object with a readings array.'] })
      if (!Array.isArray(body.readings))
        throw validationError({
          readings: [
            body.readings === undefined
              ? 'The readings field is required.'
              : 'The readings field must be an array.',
          ],
        })
      const outcome = await s.ingest.ingest({
        workspaceId: p.workspaceId,
        items: body.readings,
        source: 'report',
        errorPrefix: 'readings',
      })
      return json(outcome.accepted > 0 ? 201 : 200, outcome)
    },
  })
}
