// Embedded engine: the hourly rollup is written apart from the readings INSERT. A view on
// `readings` made every INSERT build, plan and write a second block: about half of chDB's
// CPU per stored reading at the sizes the ingest path writes (docs/query.md, "Rollup feed").
// Rows stored in `readings` are handed here, as the ingest path's compact feed rows (only
// the columns the rollup reads, RowBinary: a telegram's readings row is ~2-5 KB of raw
// payload, its feed row ~45 bytes; feed-rows.ts) or as the very rows inserted (JSONEachRow,
// `insertReadings`); they go to a Null table whose view
// writes the rollup, gathered for up to FEED_LINGER_MS. A second view writes the status
// reports that ride on readings rows (status.ts, migration 13). Every reader of the
// rollup first waits until nothing handed in is still pending (`rollupCurrent`), so a query
// never sees a stored reading missing from it. A kill in between is the crash case
// `markHoursMissedByACrash` already marks at the next start. A ClickHouse server keeps the
// view on `readings` (its own CPU, and every instance writing to it sees the same rollup).
import { joinBody, type InsertOptions, type Sql } from './sql.js'
import { joinRows } from './group-commit.js'
import { FEED_COLUMNS, feedRowsCarryStatus } from './feed-rows.js'

/** The Null table the rollup view reads in the embedded engine (migration 11). */
export const ROLLUP_FEED = 'readings_rollup_feed'

/** How long stored rows gather before their rollup INSERT when no reader asks earlier. */
const FEED_LINGER_MS = 1_000
/** Past this many bytes pending the rollup is written at once (memory stays bounded). */
const FEED_MAX_BYTES = 32 << 20
/** After a failed rollup INSERT the rows stay pending and the next try waits this long. */
const RETRY_MS = 1_000

/** How the feed rows of the ingest path are inserted (feed-rows.ts). */
const FEED_ROWS: InsertOptions = { columns: FEED_COLUMNS, binary: true }
/** How readings rows handed in as they were stored are inserted (their other fields skipped). */
const READINGS_ROWS: InsertOptions = { skipUnknownFields: true }

export class RollupFeed {
  /** Feed rows (RowBinary) waiting for the next write. */
  private rows: Buffer[] = []
  /** Readings rows as JSONEachRow (`insertReadings`) waiting for the next write. */
  private lines: (Buffer | string)[] = []
  private bytes = 0
  private timer: NodeJS.Timeout | null = null
  private running: Promise<void> | null = null

  constructor(private readonly sql: Sql) {}

  /** Feed rows (feed-rows.ts) of readings rows just stored in `readings`. */
  addRows(rows: Buffer): void {
    if (rows.length === 0) return
    this.rows.push(rows)
    this.added(rows.length)
  }

  /** Readings rows just stored in `readings`, as JSONEachRow (other fields are skipped). */
  add(rows: Buffer | string): void {
    if (rows.length === 0) return
    this.lines.push(rows)
    this.added(rows.length)
  }

  private added(bytes: number): void {
    this.bytes += bytes
    if (this.bytes >= FEED_MAX_BYTES) this.write().catch(() => this.arm(RETRY_MS))
    else this.arm(FEED_LINGER_MS)
  }

  private get pending(): boolean {
    return this.rows.length > 0 || this.lines.length > 0
  }

  /** Resolves once every row handed in so far is in the rollup; rejects if that failed. */
  async flush(): Promise<void> {
    while (this.running || this.pending) await this.write()
  }

  /**
   * As `flush`, where a status report handed in may not be written yet (else once the
   * running write ended). Looked for here, not when rows are handed in: scanning every feed
   * text for the mark cost the gateway 2.4 % of its main thread, and status reads are rare.
   */
  async flushStatuses(): Promise<void> {
    while (this.running) await this.running.catch(() => {})
    if (
      this.rows.some(feedRowsCarryStatus) ||
      this.lines.some((rows) => rows.includes(STATUS_MARK))
    )
      await this.flush()
  }

  private arm(ms: number): void {
    if (this.timer) return
    this.timer = setTimeout(() => {
      this.timer = null
      // A failure keeps the rows for the next try (or the next reader's flush).
      this.write().catch(() => this.arm(RETRY_MS))
    }, ms)
    this.timer.unref()
  }

  /** The rollup INSERTs of what is pending (after the running ones): one per kind of rows. */
  private async write(): Promise<void> {
    while (this.running) await this.running.catch(() => {})
    if (!this.pending) return
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    const rows = this.rows.length ? joinBody(this.rows) : null
    const lines = this.lines.length ? joinRows(this.lines) : null
    this.rows = []
    this.lines = []
    this.bytes = 0
    this.running = this.insert(rows, lines).finally(() => {
      this.running = null
    })
    return this.running
  }

  private async insert(rows: Buffer | null, lines: Buffer | null): Promise<void> {
    try {
      if (rows) await this.sql.insert(ROLLUP_FEED, rows, FEED_ROWS)
      rows = null
      if (lines) await this.sql.insert(ROLLUP_FEED, lines, READINGS_ROWS)
    } catch (err) {
      // Not lost: what was not written goes back in front of what arrived meanwhile, for
      // the next try.
      if (rows) {
        this.rows.unshift(rows)
        this.bytes += rows.length
      }
      if (lines) {
        this.lines.unshift(lines)
        this.bytes += lines.length
      }
      throw err
    }
  }
}

/**
 * Whether `sql`'s rollup is fed apart from the readings INSERT: the embedded engine, where
 * one process owns the data directory, so its feed is the only one. The schema (migration 11)
 * and the writers both follow this one answer.
 */
export function rollupFedApart(sql: Pick<Sql, 'kind'>): boolean {
  return sql.kind === 'chdb'
}

const feeds = new WeakMap<Sql, RollupFeed>()

/** The rollup feed of an embedded engine; null for a server (its view does the work). */
export function rollupFeed(sql: Sql): RollupFeed | null {
  if (!rollupFedApart(sql)) return null
  let f = feeds.get(sql)
  if (!f) feeds.set(sql, (f = new RollupFeed(sql)))
  return f
}

/** How a feed line or readings row marks the status report it carries (status.ts). */
export const STATUS_MARK = '"has_status":1'

/** Before reading status reports: every one stored with its readings row is written. */
export async function statusCurrent(sql: Sql): Promise<void> {
  await feeds.get(sql)?.flushStatuses()
}

/** Before reading or deleting rollup rows: every stored reading is counted in it. */
export async function rollupCurrent(sql: Sql): Promise<void> {
  await feeds.get(sql)?.flush()
}

/**
 * Stores readings rows given as JSONEachRow and hands them to the rollup: the path for every
 * write of `readings` outside the group commit (rewrites, fixtures, benches).
 */
export async function insertReadings(sql: Sql, rows: Buffer | string): Promise<void> {
  const body = typeof rows === 'string' ? Buffer.from(rows) : rows
  await sql.insert('readings', body)
  rollupFeed(sql)?.add(body)
}
