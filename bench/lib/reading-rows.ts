// Bodies of `readings` rows shaped like the meter actor's: `lane` meters per body, a rising
// saldo register, the whole shape-A item as raw payload. As JSONEachRow (the insert bench)
// and as the readings writer sends them (the storage ceiling).
import { BodyWriter } from '../../src/store/body-writer.js'
import { FeedRows } from '../../src/store/feed-rows.js'
import { rowHeads, rowOutOf, writeReadingRow } from '../../src/store/reading-row.js'
import { chTime } from '../../src/store/sql.js'

const START = Date.UTC(2026, 0, 1)

export function readingRowsWriter(lane: number): (rows: number) => string {
  let version = Date.now() * 1000
  let step = 0
  return (rows) => {
    const meters = Math.min(rows, lane)
    let out = ''
    const now = chTime(Date.now())
    for (let k = 0; k < rows; k++) {
      const m = k % meters
      if (m === 0) step++
      const value = step * 0.25
      const t = START + step * 60_000
      // Shape A keeps the whole item as its raw payload (src/ingest/prepare.ts).
      const raw = JSON.stringify({
        meter: `g0-${m}`,
        kind: 'saldo',
        value,
        unit: 'kwh',
        recorded_at: new Date(t).toISOString(),
      })
      out +=
        JSON.stringify({
          workspace_id: 1,
          meter_id: 1 + m,
          kind: 'saldo',
          recorded_at: chTime(t),
          value,
          unit: 'kwh',
          canonical_value: value,
          canonical_unit: 'kwh',
          quality_flags: [],
          raw_payload: raw,
          ingested_at: now,
          version: version++,
        }) + '\n'
    }
    return out
  }
}

/**
 * The same rows as the readings writer hands them to the store: TabSeparated through
 * `writeReadingRow` (status columns included, as the embedded engine has them), and their
 * rollup feed rows (src/store/feed-rows.ts).
 */
export function readingBodiesWriter(
  lane: number,
): (rows: number) => { body: Buffer; feed: Buffer } {
  const json = readingRowsWriter(lane)
  return (rows) => {
    const out = new BodyWriter()
    const feed = new FeedRows(rows)
    for (const line of json(rows).split('\n')) {
      if (!line) continue
      const r = JSON.parse(line)
      const row = rowOutOf(r)
      writeReadingRow(out, rowHeads(r.workspace_id, r.meter_id), row, true)
      feed.row(r.workspace_id, r.meter_id, row)
    }
    return { body: out.take(), feed: feed.take() }
  }
}
