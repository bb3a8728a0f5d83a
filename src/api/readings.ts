// GET /api/v1/readings: raw rows, hourly/daily buckets (tz-aware, DST-correct) and derived
// consumption (api-v1.md "GET /api/v1/readings"; exactness and limits in docs/query.md).
import { Type } from '@sinclair/typebox'
import { FieldErrorCollector, validationError } from '../errors.js'
import type { QueryParam } from '../http/contract.js'
import type { Router } from '../http/router.js'
import { json, type HttpResponse } from '../http/types.js'
import { derivedConsumption } from '../query/consumption.js'
import { intParam, enumParam, meta, pageParams, rangeParams } from '../query/params.js'
import { aggregateReadings } from '../store/readings-buckets.js'
import type { RangeFilter } from '../store/readings-filter.js'
import { rawReadings } from '../store/readings-query.js'
import { isoLocal, isValidTimeZone, offsetMs } from '../domain/time.js'
import { displayUnitOf, fromCanonical, familyOf, meterUnit } from '../domain/units.js'
import type { ApiDeps } from './deps.js'
import { tokenRoute } from './route.js'
import { exportFormat, exportReadings } from './readings-export.js'
import type { Meter } from '../store/meter-row.js'

const KINDS = ['consumption', 'saldo'] as const
const AGGREGATES = ['raw', 'hourly', 'daily'] as const

/** The time range and paging of a listing (query/params.ts reads them). */
export const RANGE_QUERY: QueryParam[] = [
  { name: 'from', schema: Type.String({ description: 'ISO 8601' }) },
  { name: 'to', schema: Type.String({ description: 'ISO 8601' }) },
  { name: 'page', schema: Type.Integer({ minimum: 1, default: 1 }) },
  { name: 'per_page', schema: Type.Integer({ minimum: 1, default: 100 }) },
]
const READINGS_QUERY: QueryParam[] = [
  { name: 'meter_id', schema: Type.Integer() },
  { name: 'group_id', schema: Type.Integer() },
  { name: 'kind', schema: Type.Union([Type.Literal('consumption'), Type.Literal('saldo')]) },
  {
    name: 'aggregate',
    schema: Type.Union([Type.Literal('raw'), Type.Literal('hourly'), Type.Literal('daily')]),
  },
  { name: 'derive', schema: Type.Literal('consumption') },
  { name: 'interpolate', schema: Type.Literal('linear') },
  { name: 'tz', schema: Type.String({ description: 'IANA time zone' }) },
  {
    name: 'format',
    schema: Type.Union(['json', 'csv', 'ndjson', 'parquet'].map((f) => Type.Literal(f))),
    description:
      'Export format (also by Accept: text/csv, application/x-ndjson, application/vnd.apache.parquet): the whole range streamed, no paging (docs/query.md "Exports")',
  },
  ...RANGE_QUERY,
]

/** Meters of the workspace, of one meter, or of a group's subtree; 422 for unknown ids. */
export async function scopeMeters(
  s: Pick<ApiDeps, 'groups' | 'meters'>,
  ws: number,
  meterId: number | undefined,
  groupId: number | undefined,
): Promise<Meter[]> {
  if (meterId !== undefined) {
    const m = await s.meters.byId(ws, meterId)
    if (!m) throw validationError({ meter_id: ['The selected meter_id is invalid.'] })
    return [m]
  }
  const all = await s.meters.list(ws)
  if (groupId === undefined) return all
  const g = await s.groups.get(ws, groupId)
  if (!g) throw validationError({ group_id: ['The selected group_id is invalid.'] })
  const subtree = new Set(
    (await s.groups.list(ws)).filter((x) => x.path.startsWith(g.path)).map((x) => x.id),
  )
  subtree.add(g.id)
  return all.filter((m) => m.group_id !== null && subtree.has(m.group_id))
}

// display_unit (docs/query.md, "Display unit"): every row also carries its values in the
// meter's display unit, next to the canonical ones; with no display_unit those are the
// canonical values and unit.
function rawDisplay(
  m: Meter | undefined,
  r: { canonical_value: number | null; canonical_unit: string | null },
) {
  const unit = m ? displayUnitOf(m, r.canonical_unit) : r.canonical_unit
  return {
    display_value: r.canonical_value === null ? null : fromCanonical(r.canonical_value, unit),
    display_unit: r.canonical_value === null ? null : unit,
  }
}

function aggregateDisplay(
  m: Meter | undefined,
  r: { sum: number | null; min: number | null; max: number | null; avg: number | null },
) {
  const unit = m ? displayUnitOf(m, familyOf(meterUnit(m))) : null
  return {
    display_unit: unit,
    display_sum: fromCanonical(r.sum, unit),
    display_min: fromCanonical(r.min, unit),
    display_max: fromCanonical(r.max, unit),
    display_avg: fromCanonical(r.avg, unit),
  }
}

function derivedDisplay(m: Meter, r: { consumption: number | null; unit: string | null }) {
  const unit = displayUnitOf(m, r.unit)
  return { display_consumption: fromCanonical(r.consumption, unit), display_unit: unit }
}

/** The query of GET /api/v1/readings, every field checked (422 naming each bad one). */
interface ReadingsQuery {
  meterId: number | undefined
  groupId: number | undefined
  kind: (typeof KINDS)[number] | null
  aggregate: (typeof AGGREGATES)[number]
  derive: 'consumption' | null
  interpolate: 'linear' | null
  tz: string | null
  page: number
  perPage: number
  from: number
  to: number
}

function readingsQuery(q: URLSearchParams, now: number): ReadingsQuery {
  const errs = new FieldErrorCollector()
  const meterId = intParam(q, 'meter_id', errs)
  const groupId = intParam(q, 'group_id', errs)
  if (q.has('meter_id') && q.has('group_id')) {
    errs.add('meter_id', 'The meter_id and group_id fields are mutually exclusive.')
    errs.add('group_id', 'The meter_id and group_id fields are mutually exclusive.')
  }
  const kind = enumParam(q, 'kind', KINDS, errs) ?? null
  const aggregate = enumParam(q, 'aggregate', AGGREGATES, errs) ?? 'raw'
  const derive = enumParam(q, 'derive', ['consumption'] as const, errs) ?? null
  const interpolate = enumParam(q, 'interpolate', ['linear'] as const, errs) ?? null
  let tz: string | null = null
  const rawTz = q.get('tz')
  if (rawTz !== null) {
    if (isValidTimeZone(rawTz)) tz = rawTz
    else errs.add('tz', 'The tz field must be a valid IANA time zone.')
  }
  if (derive) {
    if (!q.has('meter_id'))
      errs.add('meter_id', 'The meter_id field is required when derive is present.')
    if (q.has('aggregate') && aggregate !== 'raw')
      errs.add('aggregate', 'The aggregate field is not allowed with derive.')
    if (kind === 'consumption')
      errs.add('kind', 'derive=consumption is computed from saldo readings.')
  } else if (q.has('interpolate'))
    errs.add('interpolate', 'The interpolate field is only allowed with derive.')
  const { page, perPage } = pageParams(q, errs)
  const range = rangeParams(q, errs, now, tz)
  errs.throwIfAny()
  const { from, to } = range!
  return { meterId, groupId, kind, aggregate, derive, interpolate, tz, page, perPage, from, to }
}

type Head = { aggregate: string; from: string; to: string }

/** derive=consumption: one meter's consumption per period, from its saldo readings. */
async function derivedPage(
  s: Pick<ApiDeps, 'store'>,
  m: Meter,
  q: ReadingsQuery,
  head: Head,
): Promise<HttpResponse> {
  const { tz, page, perPage } = q
  const rows = await derivedConsumption(s.store.sql, m, q.from, q.to, q.interpolate)
  const slice = rows.slice((page - 1) * perPage, page * perPage)
  return json(200, {
    ...head,
    derive: q.derive,
    data: slice.map((r) => ({
      ...r,
      ...derivedDisplay(m, r),
      period_start: new Date(r.period_start).toISOString(),
      period_end: new Date(r.period_end).toISOString(),
      ...(tz
        ? {
            period_start_local: isoLocal(r.period_start, offsetMs(tz, r.period_start)),
            period_end_local: isoLocal(r.period_end, offsetMs(tz, r.period_end)),
          }
        : {}),
    })),
    meta: meta(page, perPage, rows.length),
  })
}

/** aggregate=raw: one row per reading identity (its newest version). */
async function rawPage(
  s: Pick<ApiDeps, 'store'>,
  byId: Map<number, Meter>,
  filter: RangeFilter,
  q: ReadingsQuery,
  head: Head,
): Promise<HttpResponse> {
  const { tz, page, perPage } = q
  const pg = { limit: perPage, offset: (page - 1) * perPage }
  const { rows, total } = await rawReadings(s.store.sql, filter, tz, pg)
  return json(200, {
    ...head,
    data: rows.map((r) => ({
      meter_id: r.meter_id,
      meter_identifier: byId.get(r.meter_id)?.meter_identifier ?? null,
      kind: r.kind,
      value: r.value,
      unit: r.unit,
      canonical_value: r.canonical_value,
      canonical_unit: r.canonical_unit,
      ...rawDisplay(byId.get(r.meter_id), r),
      quality_flags: r.quality_flags.length ? r.quality_flags : null,
      recorded_at: new Date(r.t).toISOString(),
      ...(tz ? { recorded_at_local: isoLocal(r.t, r.off!) } : {}),
    })),
    meta: meta(page, perPage, total),
  })
}

/** aggregate=hourly|daily: buckets in the query's zone. */
async function aggregatePage(
  s: Pick<ApiDeps, 'clock' | 'config' | 'store' | 'tenants'>,
  byId: Map<number, Meter>,
  filter: RangeFilter,
  q: ReadingsQuery & { aggregate: 'hourly' | 'daily' },
  head: Head,
): Promise<HttpResponse> {
  const { page, perPage } = q
  // Retention may prune readings older than now − retention_days at any time: those hours
  // come from the raw readings, never from the rollup (docs/query.md).
  const w = await s.tenants.getWorkspace(filter.ws)
  const rawBefore = w?.retention_days ? s.clock.now() - w.retention_days * 86_400_000 : undefined
  const { rows, total } = await aggregateReadings(
    s.store.sql,
    { ...filter, rawBefore, partsAware: !s.config.CLICKHOUSE_CLUSTER },
    q.aggregate,
    q.tz,
    { limit: perPage, offset: (page - 1) * perPage },
  )
  return json(200, {
    ...head,
    data: rows.map((r) => ({
      bucket_start: r.bucket_start,
      meter_id: r.meter_id,
      kind: r.kind,
      reading_count: r.reading_count,
      sum: r.sum,
      min: r.min,
      max: r.max,
      avg: r.avg,
      ...aggregateDisplay(byId.get(r.meter_id), r),
    })),
    meta: meta(page, perPage, total),
  })
}

export function registerReadings(
  router: Router,
  s: Pick<ApiDeps, 'auth' | 'clock' | 'config' | 'groups' | 'meters' | 'store' | 'tenants'>,
): void {
  tokenRoute(router, s.auth, {
    method: 'GET',
    path: '/api/v1/readings',
    summary: 'Readings: raw, hourly or daily aggregates, or derived consumption',
    scope: 'data:read',
    query: READINGS_QUERY,
    handler: async (req, { workspaceId: ws }) => {
      const q = readingsQuery(req.query, s.clock.now())
      const { kind, aggregate, from, to } = q
      const meters = await scopeMeters(s, ws, q.meterId, q.groupId)
      const head = { aggregate, from: new Date(from).toISOString(), to: new Date(to).toISOString() }
      // CSV, NDJSON, Parquet (format= or Accept): the same rows, streamed (readings-export.ts).
      const format = exportFormat(req)
      if (format)
        return exportReadings(s, req, format, {
          ws,
          meters,
          kind,
          aggregate,
          derive: q.derive,
          interpolate: q.interpolate,
          tz: q.tz,
          from,
          to,
        })
      if (q.derive) return derivedPage(s, meters[0]!, q, head)
      if (!meters.length) return json(200, { ...head, data: [], meta: meta(q.page, q.perPage, 0) })
      const byId = new Map(meters.map((m) => [m.id, m]))
      const filter: RangeFilter = { ws, meterIds: meters.map((m) => m.id), kind, from, to }
      if (aggregate === 'raw') return rawPage(s, byId, filter, q, head)
      return aggregatePage(s, byId, filter, { ...q, aggregate }, head)
    },
  })
}
