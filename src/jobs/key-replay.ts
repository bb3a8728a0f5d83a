// Replay of a meter's quarantined telegrams once its wM-Bus key is PUT (docs/decoders.md
// "Key diagnostics"). They go through the ordinary ingest path with their original
// recorded_at, reported the way an import is: a record in `imports` (GET
// /admin/v1/imports/{id}) and an `import.completed` event. Every replayed telegram leaves the
// quarantine except those rejected for their key again (still the wrong key): stored ones
// are done, and another rejection (say an unsupported security mode) no key would change.
import { RejectionTally } from '../ingest/rejections.js'
import { isKeyRejection } from '../ingest/key-quarantine.js'
import type { JobDeps } from './deps.js'
import { IMPORT_CHUNK, type ImportRunner, type ImportRecord } from './imports.js'

export interface ReplayOutcome {
  import_id: number
  status: ImportRecord['status']
  replayed: number
}

/** Replays the meter's quarantined telegrams; null when none are waiting. */
export async function replayQuarantine(
  s: Pick<JobDeps, 'clock' | 'coord' | 'ingest' | 'keyQuarantine' | 'log' | 'outbox' | 'store'> & {
    imports: ImportRunner
  },
  ws: number,
  meterId: number,
): Promise<ReplayOutcome | null> {
  const q = s.keyQuarantine
  const waiting = await q.list(ws, meterId)
  if (!waiting.length) return null
  const records = s.imports
  const r: ImportRecord = {
    id: await s.store.nextId('imports'),
    workspace_id: ws,
    status: 'completed',
    accepted: 0,
    duplicates: 0,
    rejected: 0,
    error: null,
    created_at: new Date(s.clock.now()).toISOString(),
    finished_at: null,
  }
  const tally = new RejectionTally()
  try {
    for (let start = 0; start < waiting.length; start += IMPORT_CHUNK) {
      const chunk = waiting.slice(start, start + IMPORT_CHUNK)
      const out = await s.ingest.ingest({
        workspaceId: ws,
        items: chunk.map((t) => ({
          meter: t.identifier,
          profile: 'wmbus_oms',
          recorded_at: t.recorded_at_text,
          payload: { telegram: t.telegram },
        })),
        source: 'import',
        errorPrefix: 'items',
      })
      r.accepted += out.accepted
      r.duplicates += out.duplicates
      r.rejected += out.rejected
      tally.add(out.results)
      const settled = chunk.filter((_, i) => {
        const res = out.results[i]
        return res !== undefined && !isKeyRejection(res.status, res.reason)
      })
      await q.remove(
        ws,
        meterId,
        settled.map((t) => t.telegram),
      )
    }
  } catch (e) {
    // Nothing is lost: what was not removed stays quarantined for the next key PUT.
    r.status = 'failed'
    r.error = `replay of quarantined telegrams failed: ${e instanceof Error ? e.message : String(e)}`
    s.log.error({ err: e, meter: meterId }, 'quarantine replay failed')
  }
  r.finished_at = new Date(s.clock.now()).toISOString()
  await records.save(r)
  await s.outbox
    .emit(ws, 'import.completed', {
      import_id: r.id,
      status: r.status,
      accepted: r.accepted,
      duplicates: r.duplicates,
      rejected: r.rejected,
      ...(r.error ? { error: r.error } : {}),
    })
    .catch((err) => s.log.error({ err }, 'could not emit import.completed'))
  if (tally.total > 0)
    await s.outbox
      .emit(ws, 'reading.rejected', { ...tally.summary('import') })
      .catch((err) => s.log.error({ err }, 'could not emit reading.rejected'))
  return { import_id: r.id, status: r.status, replayed: waiting.length }
}
