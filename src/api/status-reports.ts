// GET /api/v1/statusReports: device-status history of the tenant, newest first.
import { Type } from '@sinclair/typebox'
import { FieldErrorCollector, validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { intParam, meta, pageParams, rangeParams } from '../query/params.js'
import type { ApiDeps } from './deps.js'
import { RANGE_QUERY } from './readings.js'
import { tokenRoute } from './route.js'
import { pageStatusReports } from '../store/status.js'

export function registerStatusReports(
  router: Router,
  s: Pick<ApiDeps, 'auth' | 'clock' | 'meters' | 'store'>,
): void {
  tokenRoute(router, s.auth, {
    method: 'GET',
    path: '/api/v1/statusReports',
    summary: 'Device status history, newest first',
    scope: 'data:read',
    query: [{ name: 'meter_id', schema: Type.Integer() }, ...RANGE_QUERY],
    handler: async (req, { workspaceId: ws }) => {
      const q = req.query
      const errs = new FieldErrorCollector()
      const meterId = intParam(q, 'meter_id', errs)
      const { page, perPage } = pageParams(q, errs)
      const range = rangeParams(q, errs, s.clock.now(), null)
      errs.throwIfAny()
      const { from, to } = range!

      let meters = await s.meters.list(ws)
      if (meterId !== undefined) {
        const m = await s.meters.byId(ws, meterId)
        if (!m) throw validationError({ meter_id: ['The selected meter_id is invalid.'] })
        meters = [m]
      }
      const byId = new Map(meters.map((m) => [m.id, m]))
      if (!meters.length) return json(200, { data: [], meta: meta(page, perPage, 0) })
      const { rows, total } = await pageStatusReports(s.store.sql, {
        ws,
        meterIds: [...byId.keys()],
        from,
        to,
        page,
        perPage,
      })
      return json(200, {
        data: rows.map((r) => ({
          meter_id: r.meter_id,
          meter_identifier: byId.get(r.meter_id)?.meter_identifier ?? null,
          raw_flags: r.raw_flags,
          statuses: r.statuses,
          reported_at: r.reported_at,
        })),
        meta: meta(page, perPage, total),
      })
    },
  })
}
