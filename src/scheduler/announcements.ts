// meter.created after a crash. A meter is stored before its event (two INSERTs, no
// transaction across them), so a process stopped in between leaves a meter that no retry
// announces: the retried report finds the meter and creates nothing. Each pass looks for
// meters created between an hour and a minute ago without a stored meter.created and emits
// it, dated at the meter's creation. The minute keeps the pass off creations whose emit is
// still on its way in a live instance; the pass lease keeps two instances from both emitting.
import type { OutboxEvent } from '../events/outbox.js'
import type { TaskDeps } from './deps.js'
import { meterCreatedData } from '../events/catalog.js'

export const ANNOUNCE_GRACE_MS = 60_000
export const ANNOUNCE_LOOKBACK_MS = 3_600_000

export async function announceMissedMeters(
  s: Pick<TaskDeps, 'meters' | 'outbox' | 'log'>,
  now: number,
): Promise<{ announced: number }> {
  const missed = await s.meters.createdWithoutEvent(
    now - ANNOUNCE_LOOKBACK_MS,
    now - ANNOUNCE_GRACE_MS,
  )
  const byWs = new Map<number, OutboxEvent[]>()
  for (const m of missed) {
    let list = byWs.get(m.workspace_id)
    if (!list) byWs.set(m.workspace_id, (list = []))
    list.push({
      event: 'meter.created',
      data: meterCreatedData(m),
      occurredAt: Date.parse(m.created_at),
    })
  }
  for (const [ws, events] of byWs) await s.outbox.emitMany(ws, events)
  if (missed.length)
    s.log.warn(
      { meters: missed.length },
      'meter.created emitted for meters a stop left unannounced',
    )
  return { announced: missed.length }
}
