// Hourly rollup of readings that stays exact under ReplacingMergeTree versions and replays.
//
// A materialized view adds, for every block of stored readings (on a server each INSERT into
// `readings`; in the embedded engine the rollup feed, rollup-feed.ts), one row per (workspace,
// meter, kind, UTC hour) with the sums over canonical values *and* two identity counters:
// `rows` (physical rows inserted, every version and replay included) and `ids` (an exact set
// of the distinct recorded_at values, as a bitmap of their places within the hour,
// `ID_IN_HOUR`: exact, and about 20× cheaper to read than a uniqExact state). While
// rows = cardinality(ids) every reading identity of that hour was inserted exactly once, so
// the rollup sums equal the deduplicated readings. An hour where they differ is "dirty" (a
// new version or a replay arrived) and is recomputed from the raw readings with FINAL at
// query time. Hours at the edges of a query range that are only partly covered also come
// from the raw table. See docs/query.md.
import { LAST_INGESTS } from './crash-window.js'
import { ROLLUP_FEED, rollupCurrent, rollupFedApart } from './rollup-feed.js'
import type { SchemaOptions } from './sql.js'
import type { Sql } from './sql.js'

export const ROLLUP_TABLE = 'readings_hourly'

const COLUMNS = `workspace_id UInt64, meter_id UInt64, kind Enum8('consumption' = 1, 'saldo' = 2),
  bucket DateTime('UTC'),
  rows SimpleAggregateFunction(sum, UInt64),
  ids AggregateFunction(groupBitmap, UInt32),
  cnt SimpleAggregateFunction(sum, UInt64),
  total SimpleAggregateFunction(sum, Float64),
  mn SimpleAggregateFunction(min, Nullable(Float64)),
  mx SimpleAggregateFunction(max, Nullable(Float64))`

/**
 * A reading's identity within its hour, as `ids` holds it: millisecond × 3600 + second of
 * the hour, a one-to-one map of the hour's milliseconds onto [0, 3,600,000) that puts
 * readings on whole seconds (nearly all) into [0, 3600). A bitmap keeps its values in chunks
 * of 65,536: the millisecond offset it replaced put each reading of a meter reporting every
 * minute into a chunk of its own, and building, merging and reading those bitmaps was about
 * half of the rollup's CPU; in one chunk they are a short sorted array (migration 18).
 */
const ID_IN_HOUR = `toUInt32(toMillisecond(recorded_at) * 3600 + toMinute(recorded_at) * 60 + toSecond(recorded_at))`

const SELECT = `SELECT workspace_id, meter_id, kind, toStartOfHour(recorded_at) AS bucket,
  toUInt64(count()) AS rows,
  groupBitmapState(${ID_IN_HOUR}) AS ids,
  toUInt64(count(canonical_value)) AS cnt, sum(ifNull(canonical_value, 0)) AS total,
  min(canonical_value) AS mn, max(canonical_value) AS mx`

/**
 * DDL of migration 5: the rollup table, its view, and a backfill of rows stored before it.
 * Replaces migration 4's first version (uniqExact of DateTime64, too slow to read): drops it.
 * Rows inserted between the view's creation and the backfill are counted twice in the rollup,
 * which makes their hours dirty, never wrong.
 */
export function rollupStatements(o: SchemaOptions): string[] {
  return [...dropStatements(o, `${ROLLUP_TABLE}_mv`), ...createStatements(o)]
}

/** Drops `view`, the rollup table and, on a cluster, its local tables; `tail` ends each. */
function dropStatements(o: SchemaOptions, view: string, tail = ''): string[] {
  const c0 = o.cluster ? ` ON CLUSTER '${o.cluster}'` : ''
  return [
    `DROP VIEW IF EXISTS ${view}${c0}${tail}`,
    `DROP TABLE IF EXISTS ${ROLLUP_TABLE}${c0}${tail}`,
    ...(o.cluster ? [`DROP TABLE IF EXISTS ${ROLLUP_TABLE}_local${c0}${tail}`] : []),
  ]
}

/** The view that rolls up every INSERT into `readings` (single node), and its removal. */
const READINGS_VIEW = `CREATE MATERIALIZED VIEW IF NOT EXISTS ${ROLLUP_TABLE}_mv TO ${ROLLUP_TABLE} AS ${SELECT} FROM readings GROUP BY workspace_id, meter_id, kind, bucket`
const DROP_READINGS_VIEW = `DROP VIEW IF EXISTS ${ROLLUP_TABLE}_mv`
/** The embedded engine's view: it rolls up the feed (rollup-feed.ts, migration 11). */
const FEED_VIEW = `CREATE MATERIALIZED VIEW IF NOT EXISTS ${ROLLUP_FEED}_mv TO ${ROLLUP_TABLE} AS ${SELECT} FROM ${ROLLUP_FEED} GROUP BY workspace_id, meter_id, kind, bucket`

/**
 * The rollup table, its view and its fill from `readings`. Single node: `view` (on
 * `readings` unless given); a cluster's view is always on each shard's `readings_local`.
 */
function createStatements(o: SchemaOptions, view = READINGS_VIEW): string[] {
  // Monthly partitions. Yearly ones (one part per meter-year) made 1 meter × year ~25 % faster
  // but 1,000 meters × month 4× slower (key analysis over 1,000 meter ranges in a year's part):
  // measured, not adopted (docs/query.md).
  const tail = 'PARTITION BY toYYYYMM(bucket) ORDER BY (workspace_id, meter_id, kind, bucket)'
  if (!o.cluster)
    return [
      `CREATE TABLE IF NOT EXISTS ${ROLLUP_TABLE} (${COLUMNS}) ENGINE = AggregatingMergeTree ${tail}`,
      view,
      `INSERT INTO ${ROLLUP_TABLE} ${SELECT} FROM readings GROUP BY workspace_id, meter_id, kind, bucket`,
    ]
  const c = `ON CLUSTER '${o.cluster}'`
  return [
    `CREATE TABLE IF NOT EXISTS ${ROLLUP_TABLE}_local ${c} (${COLUMNS}) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/${ROLLUP_TABLE}', '{replica}') ${tail}`,
    `CREATE TABLE IF NOT EXISTS ${ROLLUP_TABLE} ${c} AS ${ROLLUP_TABLE}_local ENGINE = Distributed('${o.cluster}', currentDatabase(), ${ROLLUP_TABLE}_local, cityHash64(workspace_id))`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${ROLLUP_TABLE}_mv ${c} TO ${ROLLUP_TABLE}_local AS ${SELECT} FROM readings_local GROUP BY workspace_id, meter_id, kind, bucket`,
    `INSERT INTO ${ROLLUP_TABLE} ${SELECT} FROM readings GROUP BY workspace_id, meter_id, kind, bucket`,
  ]
}

/**
 * DDL of migration 18: the rollup rebuilt from the stored readings with `ID_IN_HOUR`. Its
 * identities are compared within an hour, so no hour may hold both forms: the table, and the
 * view that writes it (the feed's in the embedded engine, the one on `readings` on a server),
 * are dropped and made again, then filled from `readings` as migration 5 did.
 */
export function rollupRebuildStatements(o: SchemaOptions): string[] {
  // The embedded engine's view reads the feed, not `readings` (migration 11). SYNC: a
  // replicated table's path in Keeper is free again only once its drop is done.
  const view = o.rollupFeed ? `${ROLLUP_FEED}_mv` : `${ROLLUP_TABLE}_mv`
  return [
    ...dropStatements(o, view, ' SYNC'),
    ...createStatements(o, o.rollupFeed ? FEED_VIEW : READINGS_VIEW),
  ]
}

/**
 * DDL of migration 11. The embedded engine writes the rollup apart from the readings INSERT
 * (rollup-feed.ts): the view reads a Null table the stored rows are handed to, and the view
 * on `readings` goes. A server keeps it.
 */
export function rollupFeedStatements(o: SchemaOptions): string[] {
  if (!o.rollupFeed) return []
  return [
    `CREATE TABLE IF NOT EXISTS ${ROLLUP_FEED} (workspace_id UInt64, meter_id UInt64,
       kind Enum8('consumption' = 1, 'saldo' = 2), recorded_at DateTime64(3, 'UTC'),
       canonical_value Nullable(Float64)) ENGINE = Null`,
    FEED_VIEW,
    DROP_READINGS_VIEW,
  ]
}

/**
 * Bulk writes made in SQL (INSERT … SELECT, benches and seeds) are rolled up by a view on
 * `readings` while `fn` runs, as a server always does. Readings stored through the feed in
 * the meantime are counted twice: their hours turn dirty, never wrong.
 */
export async function withReadingsView<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
  if (!rollupFedApart(sql)) return fn()
  await sql.exec(READINGS_VIEW)
  try {
    return await fn()
  } finally {
    await sql.exec(DROP_READINGS_VIEW)
  }
}

/**
 * Removes rollup rows of deleted readings. Whoever deletes readings (meter deletion,
 * retention) calls this with the same meter / time bound; only whole hours are removed,
 * a partly deleted hour becomes dirty-free only when all its readings go.
 */
export async function deleteRollup(
  sql: Sql,
  ws: number,
  opts: { meterId?: number; before?: number },
): Promise<void> {
  // Rows of the deleted readings still on their way to the rollup would come back after it.
  await rollupCurrent(sql)
  const cond = ['workspace_id = {ws:UInt64}']
  const params: Record<string, unknown> = { ws }
  if (opts.meterId !== undefined) {
    cond.push('meter_id = {m:UInt64}')
    params.m = opts.meterId
  }
  if (opts.before !== undefined) {
    // An hour still holding readings at or after `before` stays; it is then over-counted
    // unless its readings are deleted by whole hours, which retention does (it cuts at the hour).
    cond.push('bucket < toDateTime(intDiv({b:Int64}, 3600000) * 3600)')
    params.b = opts.before
  }
  await sql.exec(`DELETE FROM ${ROLLUP_TABLE} WHERE ${cond.join(' AND ')}`, params)
}

/**
 * After an unclean stop of the embedded engine. Its rollup is written up to a second after the
 * readings (rollup-feed.ts), not atomically with them: killed in between, a stored reading has
 * no rollup row, and no later replay adds one (it is a duplicate). Hours of the last ingests whose
 * readings hold more physical rows than the rollup counted get one row that counts the
 * difference with no identity, so they read as dirty and are recomputed from the raw
 * readings: exact, never over- or under-counted. Merges only lower the readings' count, so
 * a hour is never marked without cause. Returns the hours marked.
 */
export async function markHoursMissedByACrash(sql: Sql): Promise<number> {
  const recent = `SELECT DISTINCT workspace_id, meter_id, kind, toStartOfHour(recorded_at) FROM readings
    WHERE ${LAST_INGESTS}`
  const missed = `SELECT r.workspace_id AS workspace_id, r.meter_id AS meter_id, r.kind AS kind,
      r.bucket AS bucket, r.n - h.n AS missing
    FROM (SELECT workspace_id, meter_id, kind, toStartOfHour(recorded_at) AS bucket, count() AS n
          FROM readings WHERE (workspace_id, meter_id, kind, toStartOfHour(recorded_at)) IN (${recent})
          GROUP BY workspace_id, meter_id, kind, bucket) AS r
    LEFT JOIN (SELECT workspace_id, meter_id, kind, bucket, sum(rows) AS n FROM ${ROLLUP_TABLE}
          WHERE (workspace_id, meter_id, kind, bucket) IN (${recent})
          GROUP BY workspace_id, meter_id, kind, bucket) AS h
    USING (workspace_id, meter_id, kind, bucket)
    WHERE r.n > h.n`
  const [c] = await sql.query<{ n: string }>(`SELECT count() AS n FROM (${missed})`)
  const n = Number(c?.n ?? 0)
  if (n > 0)
    await sql.exec(
      `INSERT INTO ${ROLLUP_TABLE} (workspace_id, meter_id, kind, bucket, rows, ids, cnt, total, mn, mx)
       SELECT workspace_id, meter_id, kind, bucket, toUInt64(missing),
              arrayReduce('groupBitmapState', emptyArrayUInt32()), toUInt64(0), toFloat64(0),
              CAST(NULL, 'Nullable(Float64)'), CAST(NULL, 'Nullable(Float64)')
       FROM (${missed})`,
    )
  return n
}
