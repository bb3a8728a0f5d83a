// GET /api/v1/statusReports: device-status history of the tenant, newest first.
import { FieldErrorCollector, validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { intParam, meta, pageParams, rangeParams } from '../query/params.js'
import type { Services } from '../services.js'
import { isoFromCh } from '../store/sql.js'

export function registerStatusReports(router: Router, s: Services): void {
  router.get('/api/v1/statusReports', async (req) => {
    const { workspaceId: ws } = await s.auth.authenticate(req, { scope: 'data:read' })
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
    const where = `workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)}
      AND reported_at >= fromUnixTimestamp64Milli(toInt64(${Math.trunc(from)}), 'UTC')
      AND reported_at <= fromUnixTimestamp64Milli(toInt64(${Math.trunc(to)}), 'UTC')`
    const params = { ws, ids: [...byId.keys()] }
    const rows = await s.store.sql.query<Record<string, any>>(
      `SELECT meter_id, raw_flags, statuses, reported_at, count() OVER () AS total
       FROM status_reports FINAL WHERE ${where}
       ORDER BY reported_at DESC, meter_id LIMIT ${perPage} OFFSET ${(page - 1) * perPage}`,
      params,
    )
    let total = rows.length ? Number(rows[0]!.total) : 0
    if (!rows.length && page > 1) {
      const [c] = await s.store.sql.query<{ c: string }>(
        `SELECT count() AS c FROM status_reports FINAL WHERE ${where}`,
        params,
      )
      total = Number(c?.c ?? 0)
    }
    return json(200, {
      data: rows.map((r) => ({
        meter_id: Number(r.meter_id),
        meter_identifier: byId.get(Number(r.meter_id))?.meter_identifier ?? null,
        raw_flags: r.raw_flags,
        statuses: r.statuses,
        reported_at: isoFromCh(r.reported_at),
      })),
      meta: meta(page, perPage, total),
    })
  })
}
