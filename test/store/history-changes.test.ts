// What another instance wrote of a meter since a row version (HistoryLoader.changes, the
// catch-up of meter-locks.ts): the newest version of each key versioned above it and
// recorded after the asking window's start, whatever the other meters of the same tick ask.
import t from 'tap'
import { HistoryLoader } from '../../src/store/history.js'
import { openTmpStore } from '../helpers/store.js'

const MIN = 60_000

t.test('rows versioned above a version, after a window start; a whole window apart', async (t) => {
  const ts = await openTmpStore()
  t.teardown(() => ts.close())
  const sql = ts.store.sql
  const t0 = Date.UTC(2026, 5, 1)
  /** A reading of `meter` at minute `min` with `version` and flags. */
  const row = (meter: number, min: number, version: number, flags: string[] = []) =>
    `(7, ${meter}, 'saldo', fromUnixTimestamp64Milli(${t0 + min * MIN}, 'UTC'), ${min}, 'kwh',
      ${min}, 'kwh', [${flags.map((f) => `'${f}'`).join(',')}], '{}', now64(3), ${version})`
  await sql.exec(
    `INSERT INTO readings (workspace_id, meter_id, kind, recorded_at, value, unit, canonical_value,
       canonical_unit, quality_flags, raw_payload, ingested_at, version) VALUES ` +
      [
        // before the version asked: known to the asking actor
        ...[0, 1, 2, 3, 4, 5].flatMap((m) => [row(1, m, 100), row(2, m, 100)]),
        // written elsewhere since: new readings, one late, and a neighbour re-versioned
        row(1, 6, 200),
        row(1, 1, 201),
        row(1, 4, 202, ['saldo_decrease']),
        row(2, 6, 200),
        row(2, 0, 201, ['implausible_rate']),
        // another meter's, not asked for
        row(3, 6, 300),
      ].join(','),
  )
  const h = new HistoryLoader(sql, () => t0)
  // meter 1's window starts after minute 2; meter 2's holds its whole history
  const [one, two] = await Promise.all([
    h.changes(7, 1, 150, t0 + 2 * MIN),
    h.changes(7, 2, 150, -Infinity),
  ])
  t.equal(h.queries.changes, 1, 'one round for the tick')
  const pick = (rows: typeof one.rows) =>
    rows.map((r) => [(r.recordedAt - t0) / MIN, r.flags]).sort((a, b) => +a[0]! - +b[0]!)
  t.same(
    pick(one.rows),
    [
      [4, ['saldo_decrease']],
      [6, []],
    ],
    'the window start holds for meter 1 (its late reading at minute 1 is before it)',
  )
  t.same(
    pick(two.rows),
    [
      [0, ['implausible_rate']],
      [6, []],
    ],
    'and not for meter 2, asked in the same tick with its whole history',
  )
  const none = await h.changes(7, 1, 300, t0)
  t.same(none.rows, [], 'nothing versioned above the last write')
})
