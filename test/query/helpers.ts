// Direct inserts for query tests (ingest is tested elsewhere): readings and status reports
// go straight into ClickHouse, the way the store writes them.
import { insertReadings as storeReadings } from '../../src/store/rollup-feed.js'
import { chTime } from '../../src/store/sql.js'
import type { TestServer } from '../helpers/server.js'

export interface R {
  meter: number
  kind?: 'consumption' | 'saldo'
  at: string | number
  value: number
  unit?: string | null
  canonical?: number | null
  canonicalUnit?: string | null
  flags?: string[]
  version?: number
}

let v = 1
export async function insertReadings(s: TestServer, ws: number, rows: R[]): Promise<void> {
  const lines = rows.map((r) =>
    JSON.stringify({
      workspace_id: ws,
      meter_id: r.meter,
      kind: r.kind ?? 'consumption',
      recorded_at: chTime(typeof r.at === 'number' ? r.at : Date.parse(r.at)),
      value: r.value,
      unit: r.unit === undefined ? 'kwh' : r.unit,
      canonical_value: r.canonical === undefined ? r.value : r.canonical,
      canonical_unit:
        r.canonicalUnit === undefined ? (r.canonical === null ? null : 'kwh') : r.canonicalUnit,
      quality_flags: r.flags ?? [],
      raw_payload: '{}',
      ingested_at: chTime(Date.now()),
      version: r.version ?? v++,
    }),
  )
  await storeReadings(s.app.parts.store.sql, lines.join('\n'))
}

export async function insertStatus(
  s: TestServer,
  ws: number,
  meter: number,
  at: string,
  raw: string[],
  statuses: string[],
): Promise<void> {
  await s.app.parts.store.sql.insert(
    'status_reports',
    JSON.stringify({
      workspace_id: ws,
      meter_id: meter,
      reported_at: chTime(Date.parse(at)),
      raw_flags: raw,
      statuses,
      version: v++,
    }),
  )
}

export async function createMeter(
  s: TestServer,
  token: string,
  body: Record<string, unknown>,
): Promise<any> {
  const r = await s.call('POST', '/api/v1/meters', { token, body })
  if (r.status !== 201) throw new Error(`create meter → ${r.status} ${r.text}`)
  return r.body.data
}

export const qs = (o: Record<string, string | number | undefined>) =>
  '?' +
  Object.entries(o)
    .filter(([, x]) => x !== undefined)
    .map(([k, x]) => `${k}=${encodeURIComponent(String(x))}`)
    .join('&')
