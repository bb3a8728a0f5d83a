// The filter every GET /readings query starts from (workspace, meters, kind, inclusive time
// range, a page) and the SQL conditions made of it. Its own module because both the raw and
// saldo reads (readings-query.ts) and the buckets (readings-buckets.ts) build on it.
import type { Kind } from '../domain/quality.js'

export type { Kind }

export interface RangeFilter {
  ws: number
  /** The meters to read; never empty (callers answer an empty set themselves). */
  meterIds: number[]
  kind: Kind | null
  /** Inclusive bounds, epoch ms. */
  from: number
  to: number
  /**
   * Readings before this instant may be pruned by retention at any moment; their hours are
   * read from the raw table only (the rollup keeps no record of deletions). Epoch ms.
   */
  rawBefore?: number
  /** False on a cluster (Distributed tables have no parts): check every hour by GROUP BY. */
  partsAware?: boolean
  /** Up to this many (meter × hour) keys the dirty check is a plain GROUP BY (tests set 0). */
  plainCheckHours?: number
}

export interface Page {
  limit: number
  offset: number
}

export function baseWhere(f: RangeFilter, params: Record<string, unknown>): string {
  params.ws = f.ws
  params.ids = f.meterIds
  const c = ['workspace_id = {ws:UInt64}', 'meter_id IN {ids:Array(UInt64)}']
  if (f.kind) {
    params.kind = f.kind
    c.push('kind = {kind:String}')
  }
  return c.join(' AND ')
}

/** `recorded_at` within [a, b) or [a, b] as a SQL condition with literal ms bounds. */
export function timeCond(a: number, b: number, inclusiveEnd: boolean): string {
  return `recorded_at >= fromUnixTimestamp64Milli(toInt64(${Math.trunc(a)}), 'UTC') AND recorded_at ${inclusiveEnd ? '<=' : '<'} fromUnixTimestamp64Milli(toInt64(${Math.trunc(b)}), 'UTC')`
}

/** A string as a ClickHouse string literal (time zone names, a format's structure). */
export const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
