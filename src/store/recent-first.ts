// Per-meter "newest row" look-ups over long histories: a GROUP BY over every row a meter ever
// had grows with its history (a year of 15-minute readings is 35,000 rows a meter), while
// the newest row of a meter that reported lately is in its last week. So the last week is
// read first, for every meter, and only the meters not found there are read in full.

const DAY = 86_400_000
/** How far back from the clock the first read goes. */
export const RECENT_MS = 7 * DAY
/** Meters asked for by id in the first read; past this many it reads the workspace's week. */
export const RECENT_IDS_MAX = 1000

/**
 * `recent(since)` answers for rows from `since` on; `all(ids)` for these meters' whole
 * history. The newest row of a meter with any row in the last week is the newest in that
 * week, so the result is `all(ids)`'s, plus what `recent` found of other meters.
 */
export async function recentFirst<V>(
  ids: readonly number[],
  now: number,
  recent: (since: number) => Promise<Map<number, V>>,
  all: (ids: number[]) => Promise<Map<number, V>>,
): Promise<Map<number, V>> {
  const found = await recent(now - RECENT_MS)
  const missing = ids.filter((id) => !found.has(id))
  if (missing.length) for (const [id, v] of await all(missing)) found.set(id, v)
  return found
}
