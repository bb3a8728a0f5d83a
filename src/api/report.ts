// POST /api/v1/reportData: a batch of readings through the ingest pipeline. 201 when at
// least one reading was stored, 200 when nothing new was (all duplicates, or all refused).
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { validationError } from '../errors.js'
import type { ApiDeps } from './deps.js'

export function registerReport(router: Router, s: Pick<ApiDeps, 'auth' | 'ingest'>): void {
  router.post('/api/v1/reportData', async (req) => {
    const p = await s.auth.authenticate(req, { scope: 'data:report' })
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
  })
}
