// The rows of the last ingests before an unclean stop of the embedded engine: what was derived
// from them apart from their INSERT (the rollup, the status reports; rollup-feed.ts) may be
// missing, and the checks at the next start look only here, whatever the size of the table.

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
