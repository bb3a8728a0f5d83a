// The rollup feed's rows as RowBinary (src/store/feed-rows.ts), read back by the engine
// through the feed's own views: every column exact, whatever the values and strings.
import t from 'tap'
import { FEED_COLUMNS, FeedRows, feedRowsCarryStatus } from '../../src/store/feed-rows.js'
import type { RowOut } from '../../src/store/reading-row.js'
import { ROLLUP_TABLE } from '../../src/store/rollup.js'
import {
  insertReadings,
  ROLLUP_FEED,
  rollupCurrent,
  rollupFeed,
} from '../../src/store/rollup-feed.js'
import { chTime } from '../../src/store/sql.js'
import { openTmpStore } from '../helpers/store.js'

const tmp = await openTmpStore()
t.teardown(() => tmp.close())
const sql = tmp.store.sql

function row(t: number, over: Partial<RowOut> = {}): RowOut {
  return {
    kind: 'consumption',
    recordedAt: chTime(t),
    recordedAtMs: t,
    value: 1,
    unit: 'kwh',
    canonicalValue: 1,
    canonicalUnit: 'kwh',
    flags: [],
    rawTsv: '{}',
    ingestedAt: chTime(Date.now()),
    version: 1,
    status: null,
    ...over,
  }
}

const long = 'ü€😀 '.repeat(40) // > 127 bytes: a two-byte length
const odd = ["it's", 'back\\slash', 'tab\there', 'new\nline', '', long]

t.test('rows read back exactly through the rollup and status views', async (t) => {
  const hour = Date.UTC(2026, 5, 1, 10)
  // Before 1970: negative milliseconds (a status report keeps them; the rollup's hourly
  // buckets are DateTime, which starts in 1970, so that row's hour is not compared).
  const early = Date.UTC(1950, 5, 1, 10, 0, 0, 5)
  const feed = new FeedRows()
  const rows: [number, RowOut][] = [
    [1, row(hour, { canonicalValue: 2.5 })],
    [1, row(hour + 60_000 + 250, { canonicalValue: -0.125 })],
    [1, row(hour + 120_000, { canonicalValue: null })],
    [1, row(hour + 180_000, { canonicalValue: Number.NaN })],
    [2, row(hour, { kind: 'saldo', canonicalValue: 1e300 })],
    [
      2 ** 40 + 3,
      row(hour, {
        version: 2 ** 52 + 7,
        status: { rawFlags: odd, statuses: Array.from({ length: 200 }, (_, i) => `s${i}`) },
      }),
    ],
    [3, row(early, { version: 9, status: { rawFlags: [], statuses: [] } })],
  ]
  for (const [meter, r] of rows) feed.row(2 ** 33 + 1, meter, r)
  const body = feed.take()
  t.ok(feedRowsCarryStatus(body), 'a status report is found among the rows')
  await sql.insert(ROLLUP_FEED, body, { columns: FEED_COLUMNS, binary: true })

  const hourly = await sql.query<Record<string, unknown>>(
    `SELECT toString(meter_id) AS meter, toString(kind) AS kind, toString(bucket) AS bucket,
       toUInt64(sum(rows)) AS rows, toUInt64(sum(cnt)) AS cnt, sum(total) AS total,
       min(mn) AS mn, max(mx) AS mx, bitmapToArray(groupBitmapMergeState(ids)) AS ids
     FROM ${ROLLUP_TABLE} WHERE workspace_id = {ws:UInt64} AND meter_id != 3
     GROUP BY meter_id, kind, bucket ORDER BY meter_id, kind`,
    { ws: 2 ** 33 + 1 },
  )
  t.same(
    hourly.map((h) => ({
      ...h,
      rows: Number(h.rows),
      cnt: Number(h.cnt),
      ids: (h.ids as number[]).map(Number).sort((a, b) => a - b),
    })),
    [
      {
        meter: '1',
        kind: 'consumption',
        bucket: '2026-06-01 10:00:00',
        rows: 4,
        cnt: 2,
        total: 2.375,
        mn: -0.125,
        mx: 2.5,
        // millisecond × 3600 + second of the hour (ID_IN_HOUR)
        ids: [0, 120, 180, 250 * 3600 + 60],
      },
      {
        meter: '2',
        kind: 'saldo',
        bucket: '2026-06-01 10:00:00',
        rows: 1,
        cnt: 1,
        total: 1e300,
        mn: 1e300,
        mx: 1e300,
        ids: [0],
      },
      { ...sameHour(), meter: String(2 ** 40 + 3) },
    ],
    'sums, counts, nulls (NaN as null), kinds, times and identities',
  )

  const reports = await sql.query<{
    meter: string
    at: string
    raw_flags: string[]
    statuses: string[]
    version: string
  }>(
    `SELECT toString(meter_id) AS meter, toString(reported_at) AS at, raw_flags, statuses,
       toString(version) AS version
     FROM status_reports WHERE workspace_id = {ws:UInt64} ORDER BY meter_id`,
    { ws: 2 ** 33 + 1 },
  )
  t.same(reports, [
    { meter: '3', at: '1950-06-01 10:00:00.005', raw_flags: [], statuses: [], version: '9' },
    {
      meter: String(2 ** 40 + 3),
      at: '2026-06-01 10:00:00.000',
      raw_flags: odd,
      statuses: Array.from({ length: 200 }, (_, i) => `s${i}`),
      version: String(2 ** 52 + 7),
    },
  ])
})

function sameHour() {
  return {
    kind: 'consumption',
    bucket: '2026-06-01 10:00:00',
    rows: 1,
    cnt: 1,
    total: 1,
    mn: 1,
    mx: 1,
    ids: [0],
  }
}

t.test('a status report is found wherever it is among the rows', async (t) => {
  const at = Date.UTC(2026, 0, 1)
  const plain = new FeedRows()
  for (let i = 0; i < 50; i++)
    plain.row(1, i, row(at + i * 1000, { canonicalValue: i % 3 ? i : null }))
  t.notOk(feedRowsCarryStatus(plain.take()), 'none among 50 rows without')
  t.notOk(feedRowsCarryStatus(new FeedRows().take()), 'none in no rows')
  const last = new FeedRows(3)
  for (let i = 0; i < 300; i++) last.row(1, i, row(at + i * 1000))
  last.row(1, 300, row(at, { status: { rawFlags: odd, statuses: ['leak'] } }))
  t.ok(feedRowsCarryStatus(last.take()), 'the last of 301 rows, past the first buffer size')
  t.throws(() => new FeedRows().row(1, 1, row(at, { kind: 'water' })), /kind water/)
})

t.test('feed rows and readings rows handed in together are both written', async (t) => {
  const at = Date.UTC(2026, 1, 1, 8)
  const feed = new FeedRows()
  feed.row(5, 1, row(at))
  rollupFeed(sql)!.addRows(feed.take())
  await insertReadings(
    sql,
    JSON.stringify({
      workspace_id: 5,
      meter_id: 2,
      kind: 'consumption',
      recorded_at: chTime(at),
      value: 4,
      unit: 'kwh',
      canonical_value: 4,
      canonical_unit: 'kwh',
      quality_flags: [],
      raw_payload: '{}',
      ingested_at: chTime(at),
      version: 1,
    }) + '\n',
  )
  await rollupCurrent(sql)
  const [r] = await sql.query<{ rows: string; total: number }>(
    `SELECT toUInt64(sum(rows)) AS rows, sum(total) AS total FROM ${ROLLUP_TABLE} WHERE workspace_id = 5`,
  )
  t.same({ rows: Number(r!.rows), total: r!.total }, { rows: 2, total: 5 })
})
