// Per-meter "newest row" look-ups over long histories: a GROUP BY over every row a meter ever
// had grows with its history (a year of 15-minute readings is 35,000 rows a meter), while
// the newest row of a meter that reported lately is in its last week. So the last week is
// read first, for every meter, and only the meters not found there are read in full.
import { chTime } from './sql.js'

const DAY = 86_400_000
/** How far back from the clock the first read goes. */
export const RECENT_MS = 7 * DAY
/** Meters asked for by id in the first read; past this many it reads the workspace's week. */
export const RECENT_IDS_MAX = 1000

/**
 * A per-meter look-up over these meters (without: every meter of the workspace) and the rows
 * from `since` on (without: all of them).
 */
export type MeterRead<V> = (ids?: number[], since?: number) => Promise<Map<number, V>>

/**
 * `read` over the last week first, then over the whole history of the meters of `ids` it did
 * not find there. The newest row of a meter with any row in the last week is the newest in
 * that week, so the result is a read of the whole history of `ids`, plus what the first read
 * found of other meters.
 */
export async function recentFirst<V>(
  ids: readonly number[],
  now: number,
  read: MeterRead<V>,
): Promise<Map<number, V>> {
  const found = await read(ids.length <= RECENT_IDS_MAX ? [...ids] : undefined, now - RECENT_MS)
  const missing = ids.filter((id) => !found.has(id))
  if (missing.length) for (const [id, v] of await read(missing)) found.set(id, v)
  return found
}

/** The WHERE terms (each after an AND) and parameters of a `MeterRead` whose time is `column`. */
export function meterReadFilter(
  column: string,
  ids?: number[],
  since?: number,
): { where: string; params: Record<string, unknown> } {
  return {
    where:
      (ids ? ' AND meter_id IN {ids:Array(UInt64)}' : '') +
      (since !== undefined ? ` AND ${column} >= {since:DateTime64(3, 'UTC')}` : ''),
    params: { ...(ids ? { ids } : {}), ...(since !== undefined ? { since: chTime(since) } : {}) },
  }
}
