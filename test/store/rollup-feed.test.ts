// The embedded engine writes the hourly rollup apart from the readings INSERT
// (src/store/rollup-feed.ts): a reader never sees a stored reading missing from it, a failed
// rollup write loses nothing, and a clean stop leaves nothing to mark at the next start. The
// status reports that ride on readings rows (src/store/status.ts) reach their readers the
// same way, and a kill before the feed wrote them loses none.
import t from 'tap'
import { aggregateReadings } from '../../src/store/readings-buckets.js'
import { markHoursMissedByACrash, ROLLUP_TABLE } from '../../src/store/rollup.js'
import { withReadingsPartsHeld } from '../../src/store/crash-window.js'
import { ROLLUP_FEED, rollupCurrent } from '../../src/store/rollup-feed.js'
import { BodyWriter } from '../../src/store/body-writer.js'
import { FeedRows } from '../../src/store/feed-rows.js'
import { rowHeads, rowOutOf, writeReadingRow } from '../../src/store/reading-row.js'
import { chTime } from '../../src/store/sql.js'
import {
  latestStatuses,
  pageStatusReports,
  restoreStatusMissedByACrash,
} from '../../src/store/status.js'
import { openTmpStore } from '../helpers/store.js'

const tmp = await openTmpStore()
t.teardown(() => tmp.close())
let store = tmp.store

const HOUR = Date.parse('2025-03-01T10:00:00Z')
let version = 1
/** `n` consumption readings of 1 kWh of `meter`, a minute apart from `HOUR`, as the actor writes them. */
function rows(meter: number, n: number, from = 0): string {
  let out = ''
  for (let i = from; i < from + n; i++)
    out +=
      JSON.stringify({
        workspace_id: 1,
        meter_id: meter,
        kind: 'consumption',
        recorded_at: chTime(HOUR + i * 60_000),
        value: 1,
        unit: 'kwh',
        canonical_value: 1,
        canonical_unit: 'kwh',
        quality_flags: [],
        raw_payload: { meter: `m${meter}`, nested: { a: [1, 2] } },
        ingested_at: chTime(Date.now()),
        version: version++,
      }) + '\n'
  return out
}

/**
 * Readings rows given as JSON lines (`rows`, `withStatus`) through the readings writer as the
 * actor hands them in: TabSeparated rows, and their rollup feed rows.
 */
async function write(lines: string, n: number): Promise<void> {
  const body = new BodyWriter()
  const feed = new FeedRows()
  for (const line of lines.split('\n')) {
    if (!line) continue
    const r = JSON.parse(line)
    const row = rowOutOf({ ...r, raw_payload: JSON.stringify(r.raw_payload) })
    writeReadingRow(body, rowHeads(r.workspace_id, r.meter_id), row, true)
    feed.row(r.workspace_id, r.meter_id, row)
  }
  await store.readings.write(body.take(), n, undefined, feed.take())
}

async function rollupRows(meter: number): Promise<number> {
  const [r] = await store.sql.query<{ n: string }>(
    `SELECT toUInt64(sum(rows)) AS n FROM ${ROLLUP_TABLE} WHERE meter_id = {m:UInt64}`,
    { m: meter },
  )
  return Number(r?.n ?? 0)
}

const hourly = (meter: number) =>
  aggregateReadings(
    store.sql,
    { ws: 1, meterIds: [meter], kind: null, from: HOUR, to: HOUR + 3_600_000 - 1 },
    'hourly',
    null,
    { limit: 10, offset: 0 },
  )

t.test('the schema: no view on readings, the rollup and status views read the feed', async (t) => {
  const views = await store.sql.query<{ name: string; q: string }>(
    `SELECT name, create_table_query AS q FROM system.tables
     WHERE database = currentDatabase() AND engine = 'MaterializedView' ORDER BY name`,
  )
  t.same(
    views.map((v) => v.name),
    [`${ROLLUP_FEED}_mv`, 'status_reports_feed_mv'],
  )
  for (const v of views) t.match(v.q, new RegExp(`FROM [\\w.]*${ROLLUP_FEED}`))
})

t.test('stored rows reach the rollup before any reader sees it', async (t) => {
  await write(rows(1, 3), 3)
  // Handed on, not yet written: the rollup lags by up to a second.
  t.equal(await rollupRows(1), 0, 'the rollup write is still gathering')
  const h = await hourly(1)
  t.match(h.rows, [{ reading_count: 3, sum: 3 }], 'an aggregate waits for it')
  t.equal(h.dirtyHours, 0)
  t.equal(await rollupRows(1), 3)
})

t.test('rows are written on their own after the linger', async (t) => {
  await write(rows(2, 2), 2)
  const until = Date.now() + 5_000
  while ((await rollupRows(2)) < 2 && Date.now() < until)
    await new Promise((r) => setTimeout(r, 100))
  t.equal(await rollupRows(2), 2)
})

t.test('a failed rollup write keeps its rows for the next one', async (t) => {
  const sql = store.sql
  const real = sql.insert.bind(sql)
  let failures = 1
  sql.insert = async (table, body, opts) => {
    if (table === ROLLUP_FEED && failures-- > 0) throw new Error('disk full')
    return real(table, body, opts)
  }
  t.teardown(() => {
    sql.insert = real
  })
  await write(rows(3, 4), 4)
  await t.rejects(rollupCurrent(sql), /disk full/, 'a reader is told, not answered short')
  t.equal(await rollupRows(3), 0)
  const h = await hourly(3)
  t.match(h.rows, [{ reading_count: 4, sum: 4 }], 'the next reader gets them all, once')
  t.equal(await rollupRows(3), 4)
})

t.test('a clean stop writes the rollup; the next start has nothing to mark', async (t) => {
  await write(rows(4, 5), 5)
  store = await tmp.reopen()
  t.equal(await rollupRows(4), 5)
  t.equal(await markHoursMissedByACrash(store.sql), 0)
})

/** One reading of `meter` carrying a status report, as the actor writes it (migration 13). */
function withStatus(meter: number, i: number, codes: string[]): string {
  const row = JSON.parse(rows(meter, 1, i))
  return (
    JSON.stringify({
      ...row,
      has_status: 1,
      status_raw_flags: codes.map((c) => c.toUpperCase()),
      status_codes: codes,
    }) + '\n'
  )
}

async function statusRows(meter: number): Promise<number> {
  const [r] = await store.sql.query<{ n: string }>(
    'SELECT count() AS n FROM status_reports WHERE meter_id = {m:UInt64}',
    { m: meter },
  )
  return Number(r?.n ?? 0)
}

t.test('a status report rides on its readings row; a reader waits for it', async (t) => {
  await write(withStatus(5, 0, ['leak']) + withStatus(5, 1, []), 2)
  t.equal(await statusRows(5), 0, 'still on its way with the rollup feed')
  const latest = await latestStatuses(store.sql, 1, [5])
  t.same(latest.get(5)?.statuses, [], 'the newest report, all-clear')
  t.equal(await statusRows(5), 2)
  const page = await pageStatusReports(store.sql, {
    ws: 1,
    meterIds: [5],
    from: HOUR,
    to: HOUR + 3_600_000,
    page: 1,
    perPage: 10,
  })
  t.same(
    page.rows.map((r) => [r.statuses, r.raw_flags]),
    [
      [[], []],
      [['leak'], ['LEAK']],
    ],
  )
})

t.test('a kill before the feed wrote them loses no status report', async (t) => {
  // Stored in readings, never handed to the feed: what a kill -9 in between leaves.
  await store.sql.insert('readings', withStatus(6, 0, ['tamper']))
  t.equal(await restoreStatusMissedByACrash(store.sql), 1)
  t.equal(await statusRows(6), 1)
  const latest = await latestStatuses(store.sql, 1, [6])
  t.same(latest.get(6)?.statuses, ['tamper'])
  t.equal(await restoreStatusMissedByACrash(store.sql), 0, 'nothing twice')
})

t.test(
  'the start-up checks read one set of parts: merges already running are waited out',
  async (t) => {
    // A merge committing while the checks read would take its rows out of them (crash-window.ts).
    const sql = store.sql
    const activeParts = async () =>
      (
        await sql.query<{ name: string }>(
          `SELECT name FROM system.parts WHERE database = currentDatabase() AND table = 'readings'
         AND active ORDER BY name`,
        )
      ).map((p) => p.name)
    const merging = async () =>
      Number(
        (
          await sql.query<{ n: string }>(
            `SELECT count() AS n FROM system.merges WHERE database = currentDatabase() AND table = 'readings'`,
          )
        )[0]?.n,
      )
    await sql.exec('SYSTEM STOP MERGES readings')
    for (let m = 0; m < 8; m++) await write(rows(20 + m, 4_000), 4_000)
    await sql.exec('SYSTEM START MERGES readings')
    const until = Date.now() + 20_000
    while ((await merging()) === 0 && Date.now() < until) {}
    t.ok((await merging()) > 0, 'a merge of readings runs as the checks begin')
    let seen: { merges: number; before: string[]; after: string[] } | null = null
    await withReadingsPartsHeld(sql, async () => {
      const merges = await merging()
      const before = await activeParts()
      await new Promise((r) => setTimeout(r, 300))
      seen = { merges, before, after: await activeParts() }
    })
    t.equal(seen!.merges, 0, 'no merge runs while the checks read')
    t.same(seen!.after, seen!.before, 'the parts stay the same throughout')
  },
)
