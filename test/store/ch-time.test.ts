// chTime formats a time as ClickHouse DateTime64(3) text; it keeps the day and the last time
// formatted, so times repeated, alternating and across days must each read as their own.
import t from 'tap'
import { chTime, parseChTime } from '../../src/store/sql.js'

const expected = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '')

t.test('repeated, alternating and day-crossing times each format as themselves', async (t) => {
  const a = Date.UTC(2026, 10, 28, 6, 45, 0, 123)
  const b = Date.UTC(2026, 10, 27, 23, 59, 59, 999)
  const c = Date.UTC(2026, 10, 28, 0, 0, 0, 0)
  const times = [a, a, b, a, c, c, b, b, a, a + 1, a, 0, Date.UTC(2100, 1, 28, 12, 0, 7, 5)]
  const got = times.map((ms) => chTime(ms))
  t.same(got, times.map(expected))
  t.same(
    got.map((s) => parseChTime(s)),
    times,
    'parsed back',
  )
  t.equal(chTime(new Date(b)), expected(b), 'a Date as its epoch ms')
})
