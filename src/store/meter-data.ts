// Everything stored for one meter besides its row: readings (and their rollup), status
// reports and exchanges. Removed together when the meter is deleted.
import type { StoredReadingRow } from './reading-row.js'
import { deleteRollup } from './rollup.js'
import { insertReadings } from './rollup-feed.js'
import { isoFromCh } from './sql.js'
import type { Store } from './store.js'

export interface PurgedReadings {
  count: number
  from: string | null
  to: string | null
}

/** What a purge would remove of the meter's readings: distinct readings and their span. */
export async function meterReadingSpan(
  store: Store,
  ws: number,
  meterId: number,
): Promise<PurgedReadings> {
  // Readings still waiting in the group-commit buffer are stored first, so they count (and go).
  await store.flush()
  const [c] = await store.sql.query<{ n: string; lo: string | null; hi: string | null }>(
    `SELECT count() AS n, if(n = 0, NULL, min(recorded_at)) AS lo, if(n = 0, NULL, max(recorded_at)) AS hi
     FROM readings FINAL WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}`,
    { ws, m: meterId },
  )
  return {
    count: Number(c?.n ?? 0),
    from: c?.lo ? isoFromCh(c.lo) : null,
    to: c?.hi ? isoFromCh(c.hi) : null,
  }
}

/** Deletes the meter's readings, rollup rows, status reports and exchanges. */
export async function purgeMeterData(store: Store, ws: number, meterId: number): Promise<void> {
  const p = { ws, m: meterId }
  const where = 'workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}'
  await store.sql.exec(`DELETE FROM readings WHERE ${where}`, p)
  await deleteRollup(store.sql, ws, { meterId })
  await store.sql.exec(`DELETE FROM status_reports WHERE ${where}`, p)
  await store.sql.exec(`DELETE FROM meter_exchanges WHERE ${where}`, p)
}

/** Every stored reading of the meter, newest version of each, oldest first. */
export async function storedReadings(
  store: Store,
  ws: number,
  meterId: number,
): Promise<StoredReadingRow[]> {
  return store.sql.query<StoredReadingRow>(
    `SELECT * FROM readings FINAL WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} ORDER BY recorded_at, kind`,
    { ws, m: meterId },
  )
}

/** Writes new versions of readings rows (JSONEachRow lines), in INSERTs of `chunk` rows. */
export async function rewriteReadings(store: Store, lines: string[], chunk = 5000): Promise<void> {
  for (let i = 0; i < lines.length; i += chunk)
    await insertReadings(store.sql, lines.slice(i, i + chunk).join('\n'))
}
