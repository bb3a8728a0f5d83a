// A meter's window is read over spans from the clock (the last week, 90 days, everything)
// so a cold actor does not sort a long history; what it loads must be what one read of the
// whole history gives: the same rows, latest times, `whole` flags and status.
import t from 'tap'
import { HistoryLoader } from '../../src/store/history.js'
import { openTmpStore } from '../helpers/store.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR

t.test('spans from the clock load what the whole history gives', async (t) => {
  const ts = await openTmpStore()
  t.teardown(() => ts.close())
  const sql = ts.store.sql
  const now = Date.UTC(2026, 5, 1)
  /** `n` readings of a meter and kind, `step` apart, the newest `ageMs` before `now`. */
  const series = (meter: number, kind: string, n: number, step: number, ageMs = 0) =>
    sql.exec(
      `INSERT INTO readings (workspace_id, meter_id, kind, recorded_at, value, unit, canonical_value,
         canonical_unit, quality_flags, raw_payload, ingested_at, version)
       SELECT 7, ${meter}, '${kind}',
         fromUnixTimestamp64Milli(toInt64(${now - ageMs} - number * ${step}), 'UTC'),
         number, 'kwh', if(number % 17 = 3, NULL, number), 'kwh',
         if(number % 23 = 5, ['implausible_rate'], []), '{}', now64(3), 1
       FROM numbers(${n})`,
    )
  await series(1, 'saldo', 300, 15 * MIN) // 256 rows in the last week
  await series(2, 'saldo', 300, HOUR) // 168 in the last week, 256 in 90 days
  await series(3, 'saldo', 300, DAY) // too few in 90 days: the whole history is read
  await series(4, 'saldo', 100, DAY) // all of it: whole
  await series(5, 'consumption', 10, DAY, 400 * DAY) // old consumption beside new saldo
  await series(5, 'saldo', 280, 15 * MIN)
  // A second version of meter 1's newest reading: one reading in the window, its newest.
  await sql.exec(
    `INSERT INTO readings (workspace_id, meter_id, kind, recorded_at, value, unit, canonical_value,
       canonical_unit, quality_flags, raw_payload, ingested_at, version)
     VALUES (7, 1, 'saldo', fromUnixTimestamp64Milli(${now}, 'UTC'), 0, 'kwh', 0, 'kwh',
       ['saldo_decrease'], '{}', now64(3), 2)`,
  )
  await sql.exec(
    `INSERT INTO status_reports (workspace_id, meter_id, reported_at, raw_flags, statuses, version)
     VALUES (7, 1, fromUnixTimestamp64Milli(${now - HOUR}, 'UTC'), ['LEAK'], ['leak'], 1),
            (7, 3, fromUnixTimestamp64Milli(${now - 200 * DAY}, 'UTC'), [], [], 1),
            (7, 3, fromUnixTimestamp64Milli(${now - 300 * DAY}, 'UTC'), ['X'], ['error'], 1)`,
  )
  const ids = [1, 2, 3, 4, 5, 6]
  const asked: string[] = []
  const spy = {
    ...sql,
    query: (q: string, p?: Record<string, unknown>) => {
      if (q.includes('FROM readings'))
        asked.push(`${p?.kind} ${p?.since ? 'since' : 'all'} ${p?.ids}`)
      return sql.query(q, p as never)
    },
  } as typeof sql
  const bySpans = new HistoryLoader(spy, () => now)
  // A clock long before every reading: the first span is the whole history.
  const whole = new HistoryLoader(sql, () => Date.UTC(1971, 0, 1))
  const a = await Promise.all(ids.map((id) => bySpans.load(7, id)))
  const b = await Promise.all(ids.map((id) => whole.load(7, id)))
  t.same(a, b, 'the same windows, latest times, whole flags and statuses')
  t.equal(
    a[0]!.window.filter((r) => r.kind === 'saldo').length,
    255,
    'meter 1: 255 readings (256 rows, two of them versions of one)',
  )
  t.same(a[0]!.window[0]!.flags, ['saldo_decrease'], "meter 1's newest reading: its version 2")
  t.equal(a[0]!.latest.saldo, now)
  t.same(
    [a[2]!.whole.saldo, a[3]!.whole.saldo, a[4]!.whole.consumption, a[5]!.whole.saldo],
    [false, true, true, true],
    'whole: meter 3 no (300 > 256), 4 yes, 5 consumption yes, 6 (nothing) yes',
  )
  t.equal(a[4]!.latest.consumption, now - 400 * DAY)
  t.same(a[0]!.status?.statuses, ['leak'])
  t.same(a[2]!.status?.statuses, [], "meter 3's latest report, 200 days old")
  t.equal(a[1]!.status, null)
  // Saldo: meters 1 and 5 were done in the last week's read, 2 in 90 days', the rest read
  // everything; consumption (none but meter 5's, 400 days old) went through every span.
  t.same(asked.filter((q) => q.startsWith('saldo')).sort(), [
    'saldo all 3,4,6',
    'saldo since 1,2,3,4,5,6',
    'saldo since 2,3,4,6',
  ])
  t.equal(asked.filter((q) => q.startsWith('consumption')).length, 3)
  // A late reading's neighbours: the same 97 valid readings of each kind on each side as a
  // look over the whole history, found near its time where they are there.
  const all = await sql.query<{
    meter_id: string
    kind: string
    recorded_at: string
    canonical_value: number | null
    quality_flags: string[]
    version: string
  }>(
    `SELECT meter_id, kind, recorded_at, canonical_value, quality_flags, version FROM readings
     WHERE workspace_id = 7 ORDER BY version DESC LIMIT 1 BY meter_id, kind, recorded_at`,
  )
  const expect = (meter: number, t: number) => {
    const valid = all
      .filter((r) => Number(r.meter_id) === meter && r.canonical_value !== null)
      .map((r) => ({ kind: r.kind, at: Date.parse(r.recorded_at.replace(' ', 'T') + 'Z') }))
    const out: string[] = []
    for (const kind of ['consumption', 'saldo']) {
      const k = valid.filter((r) => r.kind === kind)
      const before = k
        .filter((r) => r.at < t)
        .sort((a, b) => b.at - a.at)
        .slice(0, 97)
      const after = k
        .filter((r) => r.at >= t)
        .sort((a, b) => a.at - b.at)
        .slice(0, 97)
      for (const r of [...before, ...after]) out.push(`${kind}:${r.at}`)
    }
    return out.sort()
  }
  asked.length = 0
  const late: [number, number][] = [
    [1, now - 10 * HOUR],
    [2, now - 100 * HOUR],
    [3, now - 20 * DAY],
    [5, now - HOUR],
  ]
  const near = await Promise.all(late.map(([m, at]) => bySpans.neighbourhood(7, m, [at], 97)))
  late.forEach(([m, at], i) => {
    const got = near[i]!.map((r) => `${r.kind}:${r.recordedAt}`).sort()
    t.same(got, expect(m, at), `meter ${m}: the neighbours of a reading ${(now - at) / HOUR} h old`)
  })
  t.same(
    asked.filter((q) => q.startsWith('saldo all')),
    ['saldo all 3'],
    'saldo: only meter 3 (too few in the week before the earliest time asked) read in full',
  )
})
