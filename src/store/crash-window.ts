// The rows of the last ingests before an unclean stop of the embedded engine: what was derived
// from them apart from their INSERT (the rollup, the status reports; rollup-feed.ts) may be
// missing, and the checks at the next start look only here, whatever the size of the table.
import type { Sql } from './sql.js'

/** How far back, from the newest ingest, a crash may have left derived rows unwritten. */
export const CRASH_WINDOW_MINUTES = 10

/** Only parts written in the last minutes can hold the last ingests. */
const RECENT_PARTS = `SELECT name FROM system.parts WHERE database = currentDatabase()
  AND table = 'readings' AND active AND modification_time >= (
    SELECT max(modification_time) FROM system.parts
    WHERE database = currentDatabase() AND table = 'readings' AND active
  ) - INTERVAL ${CRASH_WINDOW_MINUTES} MINUTE`

/** A WHERE condition on `readings`: rows of the last CRASH_WINDOW_MINUTES of ingest. */
export const LAST_INGESTS = `_part IN (${RECENT_PARTS})
  AND ingested_at >= (SELECT max(ingested_at) FROM readings WHERE _part IN (${RECENT_PARTS}))
    - INTERVAL ${CRASH_WINDOW_MINUTES} MINUTE`

/** How long the start-up checks wait for merges of `readings` already running to end. */
const MERGES_END_TIMEOUT_MS = 60_000

/**
 * Runs `fn` (the start-up crash checks) on one set of `readings` parts. The checks name the
 * recent parts, then read their rows: a merge committing in between takes those rows out of
 * the check, and the hours they hold are not marked. After a kill the dead process's many
 * small parts start merging the moment the engine opens. `SYSTEM STOP MERGES` returns while
 * running merges are still listed in `system.merges` (20–50 ms in a scratch), and one near
 * its commit may still commit: the likely cause of the CI runs where the MQTT crash test
 * counted 11 and 21 readings fewer in the daily rollup than stored. So no new merges, and the
 * running ones are waited out; nothing is ingested before `fn` ends.
 */
export async function withReadingsPartsHeld<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
  await sql.exec('SYSTEM STOP MERGES readings')
  try {
    const until = Date.now() + MERGES_END_TIMEOUT_MS
    for (;;) {
      const [r] = await sql.query<{ n: string }>(
        `SELECT count() AS n FROM system.merges WHERE database = currentDatabase() AND table = 'readings'`,
      )
      if (Number(r?.n ?? 0) === 0) break
      if (Date.now() > until)
        throw new Error('merges of readings did not end after SYSTEM STOP MERGES')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return await fn()
  } finally {
    await sql.exec('SYSTEM START MERGES readings')
  }
}
