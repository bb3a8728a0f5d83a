// The readings rows HistoryLoader's look-ups share: rows by (meter, kind, recorded_at) key,
// each key's newest version, the valid ones, the columns read and the TimelineReading a row
// becomes. Its own module so that history.ts holds the loader and its look-ups alone.
import type { QualityFlag, TimelineReading } from '../domain/quality.js'
import { chTime, parseChTime } from './sql.js'

/** Rows of these meters matching (meter, kind, recorded_at) keys; the id and time lists let the index prune. */
export const KEY_FILTER = `meter_id IN {ids:Array(UInt64)} AND recorded_at IN {ts:Array(DateTime64(3, 'UTC'))}
  AND concat(toString(meter_id), '|', toString(kind), '|', toString(recorded_at)) IN {keys:Array(String)}`

export interface ReadingKey {
  kind: string
  t: number
}

export function keyParams(asks: { meterId: number; keys: ReadingKey[] }[]) {
  const ids = new Set<number>()
  const ts = new Set<string>()
  const keys: string[] = []
  for (const a of asks) {
    ids.add(a.meterId)
    for (const k of a.keys) {
      const at = chTime(k.t)
      ts.add(at)
      keys.push(`${a.meterId}|${k.kind}|${at}`)
    }
  }
  return { ids: [...ids], ts: [...ts], keys }
}

/** Newest version of each reading key (instead of FINAL) over an already filtered set. */
export const NEWEST =
  'ORDER BY meter_id, kind, recorded_at, version DESC LIMIT 1 BY meter_id, kind, recorded_at'
export const COLS = 'meter_id, kind, recorded_at, canonical_value, quality_flags, version'

/** Valid = has a canonical value and no unit mismatch (docs/quality.md). */
export const VALID = "canonical_value IS NOT NULL AND NOT has(quality_flags, 'unit_mismatch')"

export function timelineReading(r: {
  kind: string
  recorded_at: string
  canonical_value: number | null
  quality_flags: string[]
}): TimelineReading {
  return {
    kind: r.kind as TimelineReading['kind'],
    recordedAt: parseChTime(r.recorded_at),
    canonicalValue: r.canonical_value === null ? null : Number(r.canonical_value),
    unitMismatch: r.quality_flags.includes('unit_mismatch'),
    flags: r.quality_flags as QualityFlag[],
  }
}
