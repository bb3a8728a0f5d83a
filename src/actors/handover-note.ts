// A hand-over note: what one instance's hold of a meter wrote, left in the coordinator for
// the instance that takes the meter next (meter-locks.ts). That instance's actor, if it saw
// the stamp the hold started from, adds these rows to its window instead of reading them
// from ClickHouse (MeterActor.catchUp): with two instances taking turns on the same meters
// the read was most of each turn (a catch-up query and a status query per round of
// meters, 30–80 ms on a ClickHouse server).
//
// A note is text, one line per turn of the hold, oldest first. A line is the meter's status
// after that turn (`<reported_at ms>|<status>|…`, or nothing when it has none), then per row
// the turn wrote: `;` kind (`c`/`s`), recorded_at ms, `,` canonical value (nothing for
// null), `,` quality flags joined by `|`. Statuses are the canonical codes and flags the
// quality flags: identifiers, never one of `;,|` or a newline.
import type { Kind, QualityFlag, TimelineReading } from '../domain/quality.js'

/** A hold whose note would pass this many characters leaves none: the next holder reads the store. */
export const NOTE_MAX_CHARS = 16_384

/** A row as a turn wrote it (a readings row's fields the window keeps). */
export interface NotedRow {
  kind: string
  recordedAtMs: number
  canonicalValue: number | null
  flags: readonly string[]
}

export interface NotedStatus {
  statuses: readonly string[]
  reportedAt: number
}

/** What a note says: the rows in the order written (a later one of a key replaces an earlier one) and the status after the last turn. */
export interface NoteChanges {
  rows: TimelineReading[]
  status: NotedStatus | null
}

/** The rows part of one turn's line (its status is added when the hold's note is made). */
export function notedRows(rows: readonly NotedRow[]): string {
  let out = ''
  for (const r of rows)
    out += `;${r.kind === 'saldo' ? 's' : 'c'}${r.recordedAtMs},${r.canonicalValue ?? ''},${r.flags.join('|')}`
  return out
}

/** A turn's line: the status after it, then its rows (`notedRows`). */
export function noteLine(status: NotedStatus | null, rows: string): string {
  if (!status) return rows
  let s = String(status.reportedAt)
  for (const x of status.statuses) s += '|' + x
  return s + rows
}

/**
 * The note a hold leaves with the stamp it left: `<stamp found>\n<stamp left>\n<lines>`, the
 * stamps saying which change of the meter the lines are (`noteBetween`).
 */
export const noteText = (found: string, left: string, lines: readonly string[]): string =>
  `${found}\n${left}\n${lines.join('\n')}`

/**
 * The lines of a note (`noteText`) where they are the whole difference between `seen` and
 * `stamp`: the hold that left it took the meter at `seen` and left `stamp`. Null otherwise.
 */
export function noteBetween(
  seen: string | null,
  stamp: string,
  note: string | null | undefined,
): string | null {
  if (!note || seen === null) return null
  const a = note.indexOf('\n')
  const b = note.indexOf('\n', a + 1)
  if (a < 0 || b < 0) return null
  return note.slice(0, a) === seen && note.slice(a + 1, b) === stamp ? note.slice(b + 1) : null
}

/** The changes a note's lines describe; null if it is not a note this version can read. */
export function readNote(text: string): NoteChanges | null {
  const rows: TimelineReading[] = []
  let status: NotedStatus | null = null
  for (const line of text.split('\n')) {
    const parts = line.split(';')
    const head = parts[0]!
    if (head === '') status = null
    else {
      const [at, ...statuses] = head.split('|')
      const reportedAt = Number(at)
      if (!Number.isSafeInteger(reportedAt)) return null
      status = { statuses, reportedAt }
    }
    for (let i = 1; i < parts.length; i++) {
      const p = parts[i]!
      const c1 = p.indexOf(',')
      const c2 = p.indexOf(',', c1 + 1)
      const k = p[0]
      const t = Number(p.slice(1, c1))
      const v = p.slice(c1 + 1, c2)
      const value = v === '' ? null : Number(v)
      if ((k !== 'c' && k !== 's') || c2 < 0 || !Number.isSafeInteger(t)) return null
      if (value !== null && !Number.isFinite(value)) return null
      const f = p.slice(c2 + 1)
      const flags = (f === '' ? [] : f.split('|')) as QualityFlag[]
      const kind: Kind = k === 's' ? 'saldo' : 'consumption'
      rows.push({
        kind,
        recordedAt: t,
        canonicalValue: value,
        unitMismatch: flags.includes('unit_mismatch'),
        flags,
      })
    }
  }
  return { rows, status }
}
