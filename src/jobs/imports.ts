// Imports of historical readings (operator-api.md, "Imports and transfers"): an NDJSON body,
// one reportData item per line, runs the ordinary ingest path (no rate limit) in chunks in
// the background, then emits `import.completed`. Every line is parsed before anything is
// ingested, so a line that is not a JSON object fails the import with nothing stored; a
// schema violation found by the pipeline fails the import at that chunk (earlier chunks
// stay stored: they are ordinary, idempotent readings) with an error naming the line.
import crypto from 'node:crypto'
import { HeldLease } from '../coord/held-lease.js'
import { ApiError } from '../errors.js'
import { RejectionTally } from '../ingest/rejections.js'
import type { JobDeps } from './deps.js'
import { ImportStore, type ImportRecord } from '../store/imports.js'

export const IMPORT_CHUNK = 1000
/**
 * Lease `import:<id>` held by the instance running an import, renewed while it runs: an
 * import in state `running` whose lease nobody holds lost its instance and is failed.
 */
export const IMPORT_LEASE_MS = 30_000

export type { ImportRecord } from '../store/imports.js'

export const importView = (r: ImportRecord) => ({
  id: r.id,
  workspace_id: r.workspace_id,
  status: r.status,
  accepted: r.accepted,
  duplicates: r.duplicates,
  rejected: r.rejected,
  error: r.error,
  created_at: r.created_at,
  finished_at: r.finished_at,
})

export class ImportRunner {
  private readonly running = new Set<Promise<void>>()
  /** Imports this instance runs (their leases are ours, never taken over as dead). */
  private readonly mine = new Set<number>()
  private readonly owner = `imports:${crypto.randomUUID()}`

  private readonly rows: ImportStore

  constructor(
    private readonly s: Pick<JobDeps, 'clock' | 'coord' | 'ingest' | 'log' | 'outbox' | 'store'>,
  ) {
    this.rows = new ImportStore(s.store)
  }

  save(r: ImportRecord): Promise<void> {
    return this.rows.save(r)
  }

  get(id: number): Promise<ImportRecord | null> {
    return this.rows.get(id)
  }

  /**
   * Imports left `running` by an instance that stopped are marked failed: at start and on
   * every scheduler pass (an owner that dies later is noticed within its lease TTL). One
   * whose lease another live instance still holds is left alone.
   */
  async failInterrupted(): Promise<number> {
    let failed = 0
    for (const id of await this.rows.runningIds()) {
      if (this.mine.has(id)) continue
      const key = `import:${id}`
      // Taking the lease proves its owner is gone; holding it, we are the one to fail it.
      if (!(await this.s.coord.lease(key, this.owner, IMPORT_LEASE_MS))) continue
      try {
        const r = await this.get(id)
        if (r?.status === 'running') {
          await this.finish(r, 'failed', 'The import was interrupted by a restart.')
          failed++
        }
      } finally {
        await this.s.coord.release(key, this.owner).catch(() => {})
      }
    }
    return failed
  }

  private async finish(
    r: ImportRecord,
    status: 'completed' | 'failed',
    error: string | null,
  ): Promise<void> {
    const done: ImportRecord = {
      ...r,
      status,
      error,
      finished_at: new Date(this.s.clock.now()).toISOString(),
    }
    await this.save(done)
    await this.s.outbox.emit(r.workspace_id, 'import.completed', {
      import_id: r.id,
      status,
      accepted: r.accepted,
      duplicates: r.duplicates,
      rejected: r.rejected,
      ...(error ? { error } : {}),
    })
  }

  async start(ws: number, body: Buffer): Promise<ImportRecord> {
    const id = await this.s.store.nextId('imports')
    // Leased before the row exists, so no sweep ever sees this import without an owner.
    const lease = await HeldLease.acquire(this.s.coord, `import:${id}`, this.owner, IMPORT_LEASE_MS)
    if (!lease) throw new Error(`import ${id} is leased by another instance`)
    this.mine.add(id)
    const r: ImportRecord = {
      id,
      workspace_id: ws,
      status: 'running',
      accepted: 0,
      duplicates: 0,
      rejected: 0,
      error: null,
      created_at: new Date(this.s.clock.now()).toISOString(),
      finished_at: null,
    }
    const done = async () => {
      await lease.release()
      this.mine.delete(id)
    }
    await this.save(r).catch(async (err: unknown) => {
      await done()
      throw err
    })
    const p = this.run({ ...r }, body)
      .catch((err) => this.s.log.error({ err, import: r.id }, 'import failed'))
      .finally(done)
    this.running.add(p)
    void p.finally(() => this.running.delete(p))
    return r
  }

  private async run(r: ImportRecord, body: Buffer): Promise<void> {
    // Parse every line first; blank lines are skipped but keep their line numbers.
    const items: unknown[] = []
    const lineOf: number[] = []
    const lines = body.toString('utf8').split('\n')
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i]!.trim()
      if (!text) continue
      let v: unknown
      try {
        v = JSON.parse(text)
      } catch (e) {
        return this.finish(r, 'failed', `line ${i + 1}: not valid JSON (${(e as Error).message})`)
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v))
        return this.finish(
          r,
          'failed',
          `line ${i + 1}: must be one JSON object (a reportData item)`,
        )
      items.push(v)
      lineOf.push(i + 1)
    }
    if (!items.length) return this.finish(r, 'failed', 'the body holds no lines')
    // One reading.rejected for the whole import, not one per chunk.
    const tally = new RejectionTally()
    const emitRejected = async () => {
      if (tally.total > 0)
        await this.s.outbox
          .emit(r.workspace_id, 'reading.rejected', { ...tally.summary('import') })
          .catch((err) => this.s.log.error({ err }, 'could not emit reading.rejected'))
    }
    for (let start = 0; start < items.length; start += IMPORT_CHUNK) {
      const chunk = items.slice(start, start + IMPORT_CHUNK)
      try {
        const out = await this.s.ingest.ingest({
          workspaceId: r.workspace_id,
          items: chunk,
          source: 'import',
          errorPrefix: 'items',
        })
        r.accepted += out.accepted
        r.duplicates += out.duplicates
        r.rejected += out.rejected
        tally.add(out.results)
      } catch (e) {
        await emitRejected()
        return this.finish(r, 'failed', describe(e, lineOf, start))
      }
      await this.save(r)
    }
    await emitRejected()
    return this.finish(r, 'completed', null)
  }

  /** Waits for running imports (shutdown). */
  async drain(): Promise<void> {
    await Promise.all([...this.running])
  }
}

/** `items.<j>.<field>: message` of a pipeline 422 → `line <n> (<field>): message`. */
function describe(e: unknown, lineOf: number[], start: number): string {
  if (e instanceof ApiError && e.errors) {
    const parts = Object.entries(e.errors).map(([k, msgs]) => {
      const m = /^items\.(\d+)(?:\.(.*))?$/.exec(k)
      if (!m) return `${k}: ${msgs.join('; ')}`
      const line = lineOf[start + Number(m[1])]
      return `line ${line}${m[2] ? ` (${m[2]})` : ''}: ${msgs.join('; ')}`
    })
    return (
      parts.slice(0, 5).join(' | ') + (parts.length > 5 ? ` (and ${parts.length - 5} more)` : '')
    )
  }
  return e instanceof Error ? e.message : String(e)
}
