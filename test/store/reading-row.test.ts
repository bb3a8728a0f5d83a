// A generic item's raw payload written from its parts (ItemParts) is JSON.stringify's text,
// as the TabSeparated field every other raw payload is.
import t from 'tap'
import { BodyWriter } from '../../src/store/body-writer.js'
import {
  isPlainGenericItem,
  rowHeads,
  writeReadingRow,
  type RowOut,
} from '../../src/store/reading-row.js'
import { tsvText } from '../../src/store/sql.js'
import { parseIsoTimestamp } from '../../src/ingest/timestamps.js'

const item = (over: Record<string, unknown> = {}) => ({
  meter: 'm-1',
  kind: 'saldo',
  value: 1.5,
  unit: 'kwh',
  recorded_at: '2026-11-27T02:09:23.974Z',
  ...over,
})

t.test('only the usual shape with plain strings is written from its parts', async (t) => {
  t.ok(isPlainGenericItem(item()))
  t.ok(isPlainGenericItem(item({ meter: 'zähler ☃ €' })), 'non-ASCII needs no escape')
  const { meter, kind, value, unit, recorded_at } = item()
  t.notOk(isPlainGenericItem({ kind, meter, value, unit, recorded_at }), 'keys in another order')
  t.notOk(isPlainGenericItem({ ...item(), profile: 'generic' }), 'a profile key')
  const noUnit: Record<string, unknown> = item()
  delete noUnit.unit
  t.notOk(isPlainGenericItem(noUnit), 'a key missing')
  for (const meter of ['a"b', 'a\\b', 'a\tb', 'a\nb', 'a\u0001b', '😀', 'a\ud800'])
    t.notOk(isPlainGenericItem(item({ meter })), JSON.stringify(meter))
  // recorded_at is not looked at: no text the timestamp check lets through needs escaping.
  for (const at of ['2026-11-27T02:09:23"Z', '2026-11-27T02:09:23\\Z', '2026-11-27\t02:09:23Z'])
    t.equal(parseIsoTimestamp(at), null, JSON.stringify(at))
  const accepted = [
    '2026-11-27T02:09:23.974Z',
    '2026-11-27 02:09',
    '2026-11-27T02:09:23z',
    '2026-11-27T02:09:23.123456789+05:45',
    '2026-11-27T02:09:23-0130',
  ]
  for (const at of accepted) {
    t.not(parseIsoTimestamp(at), null, at)
    t.equal(JSON.stringify(at), `"${at}"`, `${at} needs no escape`)
    t.notOk(/[\t\n\\]/.test(at), `${at} is plain TabSeparated`)
  }
})

t.test('the row carries JSON.stringify of the item, for any item either way', async (t) => {
  const chars = ['a', 'Z', '-', ' ', '"', '\\', '\t', '\n', 'ä', '☃', '😀', '\u0007', '\u2028']
  const values = [0, -0, 1, 1.5, 0.1 + 0.2, 1e21, 5e-7, -123456.789, 2 ** 53]
  let fromParts = 0
  for (let i = 0; i < 400; i++) {
    let meter = ''
    for (let k = 0; k < 1 + (i % 7); k++) meter += chars[(i * 7 + k * 3) % chars.length]
    const it = item({ meter, value: values[i % values.length], unit: i % 2 ? 'm3' : 'kwh' })
    const parts = isPlainGenericItem(it)
    if (parts) fromParts++
    const row: RowOut = {
      kind: it.kind,
      recordedAt: '2026-11-27 02:09:23.974',
      recordedAtMs: Date.parse('2026-11-27T02:09:23.974Z'),
      value: it.value as number,
      unit: it.unit,
      canonicalValue: null,
      canonicalUnit: null,
      flags: [],
      rawTsv: parts ? { identifier: meter, recordedAtText: it.recorded_at } : 'x',
      ingestedAt: '2026-11-28 02:00:00.000',
      version: 1,
      status: null,
    }
    const out = new BodyWriter()
    writeReadingRow(out, rowHeads(1, 2), row, false)
    const line = out.take().toString('utf8')
    const raw = line.split('\t')[9]
    if (parts) t.equal(raw, tsvText(JSON.stringify(it)), `item ${i}`)
  }
  t.ok(fromParts > 20 && fromParts < 400, `${fromParts} of 400 from their parts`)
})
