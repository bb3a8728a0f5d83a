// The newest reading and status report per meter are read over the last week first and
// over the whole history only for the meters not found there: the answers must be those of
// one read of the whole history, for meters that reported lately, long ago, or never.
import t from 'tap'
import { latestReadings } from '../../src/store/alerts.js'
import { RECENT_IDS_MAX } from '../../src/store/recent-first.js'
import { latestStatuses, latestStatusesOf } from '../../src/store/status.js'
import { openTmpStore } from '../helpers/store.js'

const DAY = 86_400_000

t.test('recent first gives what the whole history gives', async (t) => {
  const ts = await openTmpStore()
  t.teardown(() => ts.close())
  const sql = ts.store.sql
  const now = Date.UTC(2026, 5, 1)
  const at = (ms: number) => `fromUnixTimestamp64Milli(${ms}, 'UTC')`
  /** A reading of `meter` `age` before now with these flags and version. */
  const reading = (meter: number, age: number, flags: string, version = 1) =>
    `(3, ${meter}, 'saldo', ${at(now - age)}, 1, 'kwh', 1, 'kwh', ${flags}, '{}', now64(3), ${version})`
  await sql.exec(
    `INSERT INTO readings (workspace_id, meter_id, kind, recorded_at, value, unit, canonical_value,
       canonical_unit, quality_flags, raw_payload, ingested_at, version) VALUES ${[
         reading(1, DAY, "['implausible_rate']"),
         reading(1, 2 * DAY, '[]'),
         reading(1, DAY, "['saldo_decrease']", 2), // a newer version of the newest reading
         reading(2, 30 * DAY, "['rollover_wrap']"), // only long ago
         reading(2, 300 * DAY, '[]'),
         reading(3, -DAY, '[]'), // ahead of the clock
       ].join(', ')}`,
  )
  const report = (meter: number, age: number, statuses: string) =>
    `(3, ${meter}, ${at(now - age)}, [], ${statuses}, 1)`
  await sql.exec(
    `INSERT INTO status_reports (workspace_id, meter_id, reported_at, raw_flags, statuses, version)
     VALUES ${[
       report(1, 3 * DAY, "['leak']"),
       report(1, 2 * DAY, '[]'),
       report(2, 100 * DAY, "['tamper']"),
       report(2, 200 * DAY, '[]'),
     ].join(', ')}`,
  )
  const ids = [1, 2, 3, 4]
  const readings = await latestReadings(sql, 3, ids, now)
  t.same(
    [...readings].sort((a, b) => a[0] - b[0]),
    [
      [1, { at: now - DAY, flags: ['saldo_decrease'] }],
      [2, { at: now - 30 * DAY, flags: ['rollover_wrap'] }],
      [3, { at: now + DAY, flags: [] }],
    ],
    'newest reading per meter: recent, long ago, ahead of the clock; meter 4 has none',
  )
  const whole = await latestStatuses(sql, 3, ids)
  for (const many of [false, true]) {
    // Past RECENT_IDS_MAX the first read covers the workspace's week, not the ids.
    const asked = many
      ? [...ids, ...Array.from({ length: RECENT_IDS_MAX }, (_, i) => 100 + i)]
      : ids
    const got = await latestStatusesOf(sql, 3, asked, now)
    t.same(got, whole, `statuses as one read of the whole history (${asked.length} ids)`)
  }
  t.same(whole.get(2)?.statuses, ['tamper'])
  t.same(whole.get(1)?.statuses, [])
})
