import t from 'tap'
import { parseIsoTimestamp } from '../../src/ingest/timestamps.js'

t.test('an empty text is no time, before any other was read', async (t) => {
  t.equal(parseIsoTimestamp(''), null)
})

t.test('the toISOString form is read exactly (fast path), over many random instants', async (t) => {
  let mismatches = 0
  for (let k = 0; k < 20_000; k++) {
    const ms = Math.floor(((k * 2654435761) % 4e12) + 1)
    if (parseIsoTimestamp(new Date(ms).toISOString()) !== ms) mismatches++
  }
  t.equal(mismatches, 0)
})

t.test('impossible dates are refused on both paths', async (t) => {
  for (const s of [
    '2026-02-30T00:00:00.000Z',
    '2023-02-29T00:00:00.000Z',
    '1900-02-29T00:00:00.000Z',
    '2026-04-31T00:00:00.000Z',
    '2026-01-01T24:00:00.000Z',
    '2026-13-01T00:00:00.000Z',
    '2026-01-01T23:59:60.000Z',
    '2026-02-30T00:00:00Z',
    '2026-02-30T00:00:00+01:00',
  ])
    t.equal(parseIsoTimestamp(s), null, s)
  t.equal(parseIsoTimestamp('2024-02-29T00:00:00.000Z'), Date.UTC(2024, 1, 29))
})

t.test(
  'other ISO 8601 forms: offsets, no milliseconds, no offset (UTC), space separator',
  async (t) => {
    t.equal(
      parseIsoTimestamp('2026-11-22T10:00:00.123+01:00'),
      Date.parse('2026-11-22T09:00:00.123Z'),
    )
    t.equal(parseIsoTimestamp('2026-11-22T10:00:00-05:30'), Date.parse('2026-11-22T15:30:00Z'))
    t.equal(parseIsoTimestamp('2026-11-22T10:00'), Date.parse('2026-11-22T10:00:00Z'))
    t.equal(parseIsoTimestamp('2026-11-22 10:00:00Z'), Date.parse('2026-11-22T10:00:00Z'))
    t.equal(parseIsoTimestamp('yesterday'), null)
    t.equal(parseIsoTimestamp('2026-11-22T10:0a:00.000Z'), null)
  },
)

t.test('the same text again, other texts between and impossible ones after', async (t) => {
  const a = '2026-11-28T07:45:00.000Z'
  const b = '2026-11-28T07:45:00.001Z'
  const seq = [a, a, b, a, '2026-02-30T00:00:00.000Z', a, b, b, '2026-11-28T07:45:00Z', a]
  t.same(
    seq.map((s) => parseIsoTimestamp(s)),
    seq.map((s) => (s.startsWith('2026-02-30') ? null : Date.parse(s))),
  )
})
