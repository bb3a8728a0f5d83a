// The event a meter's turn emits when its status changed: `meter.status_changed`, only when
// the set of canonical statuses differs from the one before (docs/events.md).
import type { Meter } from '../store/meter-row.js'

/** The event a turn emits after its write, if the meter's status changed. */
export interface StatusChange {
  ws: number
  payload: Record<string, unknown>
}

/** The newest status report of a turn. */
export interface NewestStatus {
  statuses: string[]
  reportedAt: number
  rawFlags: string[]
}

/** The event for a meter whose status moves from `before` to `newest`; null when the set is the same. */
export function statusChanged(
  meter: Meter,
  before: { statuses: string[] } | null,
  newest: NewestStatus,
): StatusChange | null {
  if (before && sameSet(before.statuses, newest.statuses)) return null
  return {
    ws: meter.workspace_id,
    payload: {
      meter: { id: meter.id, identifier: meter.meter_identifier },
      statuses: newest.statuses,
      previous_statuses: before?.statuses ?? null,
      raw_flags: newest.rawFlags,
      reported_at: new Date(newest.reportedAt).toISOString(),
    },
  }
}

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false
  // Most reports of most meters: all clear, again (no Set made for them).
  if (a.length === 0) return true
  const s = new Set(a)
  return b.every((x) => s.has(x))
}
