// GET /api/v1/readings as a file: CSV, NDJSON or Parquet, chosen by `format=` or `Accept`
// (docs/query.md "Exports"). The same parameters, validation and tenant scoping as the JSON
// answer (the handler in readings.ts calls in here after checking them); the rows are the
// JSON answer's rows with the same field names, written by ClickHouse and streamed: nothing
// holds the whole result. An export is the whole range in one answer: the 366-day cap holds,
// and `page`/`per_page` are refused (422) rather than silently ignored.
import { validationError } from '../errors.js'
import type { HttpRequest, HttpResponse } from '../http/types.js'
import { familyOf, meterUnit, displayUnitOf, fromCanonical } from '../domain/units.js'
import { derivedConsumption } from '../query/consumption.js'
import { aggregatePlan } from '../store/readings-buckets.js'
import type { Kind } from '../store/readings-filter.js'
import { isoLocal, offsetMs } from '../domain/time.js'
import type { ApiDeps } from './deps.js'
import type { Meter } from '../store/meter-row.js'
import {
  aggregateExportQuery,
  CLICKHOUSE_FORMAT,
  derivedExportQuery,
  rawExportQuery,
  type ExportFormat,
} from '../store/readings-export.js'

export const EXPORT_MEDIA_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  ndjson: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
}
const ACCEPTED: [RegExp, ExportFormat][] = [
  [/^text\/csv$/, 'csv'],
  [/^application\/(x-)?ndjson$/, 'ndjson'],
  [/^application\/(vnd\.apache\.|x-)?parquet$/, 'parquet'],
]
const FORMATS = ['json', 'csv', 'ndjson', 'parquet'] as const

/**
 * The export format a request asks for, or null for the JSON answer. `format=` wins over
 * `Accept`; in `Accept` the first export media type listed counts (JSON otherwise).
 */
export function exportFormat(req: HttpRequest): ExportFormat | null {
  const f = req.query.get('format')
  if (f !== null) {
    if (!(FORMATS as readonly string[]).includes(f))
      throw validationError({
        format: [`The selected format is invalid; allowed: ${FORMATS.join(', ')}.`],
      })
    return f === 'json' ? null : (f as ExportFormat)
  }
  for (const part of (req.headers['accept'] ?? '').split(',')) {
    const type = part.split(';')[0]!.trim().toLowerCase()
    for (const [re, fmt] of ACCEPTED) if (re.test(type)) return fmt
  }
  return null
}

export interface ExportRequest {
  ws: number
  meters: Meter[]
  kind: Kind | null
  aggregate: 'raw' | 'hourly' | 'daily'
  derive: 'consumption' | null
  interpolate: 'linear' | null
  tz: string | null
  from: number
  to: number
}

export async function exportReadings(
  s: Pick<ApiDeps, 'clock' | 'config' | 'store' | 'tenants'>,
  req: HttpRequest,
  fmt: ExportFormat,
  x: ExportRequest,
): Promise<HttpResponse> {
  const paging = ['page', 'per_page'].filter((p) => req.query.has(p))
  if (paging.length)
    throw validationError(
      Object.fromEntries(
        paging.map((p) => [p, [`${p} does not apply to exports: an export is the whole range.`]]),
      ),
    )
  const what = x.derive ? 'consumption' : x.aggregate
  const headers = {
    'content-type': EXPORT_MEDIA_TYPES[fmt],
    'content-disposition': `attachment; filename="readings-${what}.${fmt}"`,
  }
  const query = await exportQuery(s, x, fmt)
  return {
    status: 200,
    headers,
    stream: s.store.sql.stream(query.sql, query.params, CLICKHOUSE_FORMAT[fmt]),
  }
}

async function exportQuery(
  s: Pick<ApiDeps, 'clock' | 'config' | 'store' | 'tenants'>,
  x: ExportRequest,
  fmt: ExportFormat,
) {
  if (x.derive) {
    const m = x.meters[0]!
    // One meter's series: computed in the service (as for JSON), formatted by ClickHouse.
    const rows = await derivedConsumption(s.store.sql, m, x.from, x.to, x.interpolate)
    return derivedExportQuery(
      rows.map((r) => {
        const unit = displayUnitOf(m, r.unit)
        return {
          ...r,
          period_start: new Date(r.period_start).toISOString(),
          period_end: new Date(r.period_end).toISOString(),
          display_consumption: fromCanonical(r.consumption, unit),
          display_unit: unit,
          ...(x.tz
            ? {
                period_start_local: isoLocal(r.period_start, offsetMs(x.tz, r.period_start)),
                period_end_local: isoLocal(r.period_end, offsetMs(x.tz, r.period_end)),
              }
            : {}),
        }
      }),
      x.tz !== null,
      fmt,
    )
  }
  // No meters in scope: the same query over meter id 0 (none), so the answer is still a file
  // with this shape's header (CSV) or schema (Parquet).
  const meters = x.meters.length
    ? x.meters
    : [{ id: 0, meter_identifier: '', display_unit: null, unit: null, pulse_unit: null }]
  const filter = {
    ws: x.ws,
    meterIds: meters.map((m) => m.id),
    kind: x.kind,
    from: x.from,
    to: x.to,
  }
  if (x.aggregate === 'raw')
    return rawExportQuery(
      {
        ...filter,
        meterIdentifiers: meters.map((m) => m.meter_identifier),
        displayUnits: meters.map((m) => m.display_unit ?? ''),
        tz: x.tz,
      },
      fmt,
    )
  const w = await s.tenants.getWorkspace(x.ws)
  const rawBefore = w?.retention_days ? s.clock.now() - w.retention_days * 86_400_000 : undefined
  const plan = await aggregatePlan(
    s.store.sql,
    { ...filter, rawBefore, partsAware: !s.config.CLICKHOUSE_CLUSTER },
    x.aggregate,
    x.tz,
  )
  return aggregateExportQuery(
    plan,
    filter.meterIds,
    meters.map((m) => displayUnitOf(m, familyOf(meterUnit(m))) ?? ''),
  )
}
