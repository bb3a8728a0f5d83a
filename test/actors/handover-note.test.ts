// The hand-over note's text (src/actors/handover-note.ts): what one instance wrote of a
// meter, read back by the next one exactly (rows in order, flags, null values, status).
import t from 'tap'
import { noteLine, notedRows, readNote } from '../../src/actors/handover-note.js'

const row = (kind: string, at: number, value: number | null, flags: string[] = []) => ({
  kind,
  recordedAtMs: at,
  canonicalValue: value,
  flags,
})

t.test('rows and the status after the last turn read back as written', async (t) => {
  const first = noteLine(
    { statuses: ['battery_low', 'leak'], reportedAt: 1_700_000_000_000 },
    notedRows([
      row('saldo', 1_700_000_000_000, 12.5, ['saldo_decrease', 'implausible_rate']),
      row('consumption', 1_700_000_060_000, null, ['unit_mismatch']),
    ]),
  )
  const second = noteLine(
    { statuses: [], reportedAt: 1_700_000_120_000 },
    notedRows([row('saldo', 1_700_000_000_000, 12.5), row('saldo', 1_700_000_180_000, -0.125)]),
  )
  const c = readNote(`${first}\n${second}`)
  t.same(c, {
    rows: [
      {
        kind: 'saldo',
        recordedAt: 1_700_000_000_000,
        canonicalValue: 12.5,
        unitMismatch: false,
        flags: ['saldo_decrease', 'implausible_rate'],
      },
      {
        kind: 'consumption',
        recordedAt: 1_700_000_060_000,
        canonicalValue: null,
        unitMismatch: true,
        flags: ['unit_mismatch'],
      },
      {
        kind: 'saldo',
        recordedAt: 1_700_000_000_000,
        canonicalValue: 12.5,
        unitMismatch: false,
        flags: [],
      },
      {
        kind: 'saldo',
        recordedAt: 1_700_000_180_000,
        canonicalValue: -0.125,
        unitMismatch: false,
        flags: [],
      },
    ],
    status: { statuses: [], reportedAt: 1_700_000_120_000 },
  })
  t.equal(
    readNote(notedRows([row('saldo', 1, 0.1 + 0.2)]))!.rows[0]!.canonicalValue,
    0.1 + 0.2,
    'values exact',
  )
})

t.test('a turn that wrote nothing, a meter with no status', async (t) => {
  t.same(readNote(noteLine(null, notedRows([]))), { rows: [], status: null })
  t.same(
    readNote(`${noteLine({ statuses: ['error'], reportedAt: 5 }, '')}\n${noteLine(null, '')}`),
    { rows: [], status: null },
    'the last line says the status',
  )
})

t.test('text that is not a note reads as none', async (t) => {
  for (const bad of ['x|error', ';q1,2,', ';c1', ';cx,1,', ';c1,abc,', ';c1.5,1,'])
    t.equal(readNote(bad), null, JSON.stringify(bad))
})
