// Group commit: concurrent requests hand their rows here; while one INSERT is running the
// next batch accumulates, and it is written as one INSERT the moment the running one ends
// (rows that may linger, once the most urgent of them has).
// No timer adds latency at low load, and at high load inserts grow large by themselves,
// which is what chDB wants (107 k rows/s at 1 k rows per insert, 211 k at 10 k; DESIGN.md).
// Each caller's promise resolves only after the INSERT that carried its rows succeeded.
import { insertChannel } from './channel.js'
import { bodyParts, joinBody, type InsertBody, type InsertOptions, type Sql } from './sql.js'

/**
 * Rows in the writer's format (sql.ts `InsertOptions`), as text or UTF-8 bytes, whole or in
 * pieces (body-writer.ts).
 */
export type Rows = InsertBody

interface Pending {
  chunks: Rows[]
  counts: number[]
  /** Per chunk, what is handed on to `stored` in its place (see `write`). */
  companions: Rows[]
  rows: number
  waiters: { resolve: () => void; reject: (e: unknown) => void }[]
  /** When its most urgent row's linger ends (performance.now()). */
  dueAt: number
}

export interface GroupCommitStats {
  inserts: number
  rows: number
  lastInsertMs: number
}

export interface GroupCommitOptions {
  /** Past this many rows a batch is cut even if an insert is still running. */
  maxRows?: number
  /**
   * How long a batch gathers before its INSERT when none is running: 0 (the next
   * microtask) where a request waits; more where nobody does, for fewer, larger parts.
   */
  lingerMs?: number
  /**
   * Called after every successful INSERT, before its callers are answered: with the bytes
   * inserted (in pieces) and the companion texts of its writes (each write's rows where it
   * gave none). The pieces are the writers' (their blocks are used again once the write is
   * answered): read them during the call, never keep them.
   */
  stored?: (rows: readonly Uint8Array[], companions: Buffer) => void
  /** How every INSERT of this writer is made (sql.ts). */
  insert?: InsertOptions
}

export class GroupCommit {
  private readonly maxRows: number
  private readonly lingerMs: number
  private readonly stored: GroupCommitOptions['stored']
  private readonly insertOptions: InsertOptions
  private pending: Pending | null = null
  private running: Promise<void> | null = null
  /** When the next batch is due to start (performance.now()), null when none is scheduled. */
  private startAt: number | null = null
  private timer: NodeJS.Timeout | null = null
  readonly stats: GroupCommitStats = { inserts: 0, rows: 0, lastInsertMs: 0 }

  constructor(
    private readonly sql: Sql,
    private readonly table: string,
    opts: GroupCommitOptions = {},
  ) {
    this.maxRows = opts.maxRows ?? 100_000
    this.lingerMs = opts.lingerMs ?? 0
    this.stored = opts.stored
    this.insertOptions = opts.insert ?? {}
  }

  /**
   * Queues `rows` rows in the writer's format (JSONEachRow, or TabSeparated lines of
   * `insert.columns`); resolves once they are stored. `lingerMs` (default: the writer's) is
   * how long these rows may wait for others: a batch starts when its most urgent row's
   * linger ends, so rows nobody waits for ride along with the next urgent INSERT instead of
   * writing one of their own. `companion` is what `stored` gets for these rows once they are
   * stored (another table's rows derived from them, say), in place of the rows themselves.
   */
  write(text: Rows, rows: number, lingerMs = this.lingerMs, companion: Rows = text): Promise<void> {
    if (rows === 0) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const p = (this.pending ??= {
        chunks: [],
        counts: [],
        companions: [],
        rows: 0,
        waiters: [],
        dueAt: Infinity,
      })
      p.dueAt = Math.min(p.dueAt, performance.now() + lingerMs)
      p.chunks.push(text)
      p.counts.push(rows)
      p.companions.push(companion)
      p.rows += rows
      p.waiters.push({ resolve, reject })
      if (!this.running) this.startWithin(lingerMs)
    })
  }

  /** Starts the next batch within `ms` (sooner if already due sooner). */
  private startWithin(ms: number): void {
    const at = performance.now() + ms
    if (this.startAt !== null && this.startAt <= at) return
    this.startAt = at
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    const start = () => {
      if (this.startAt !== at) return // superseded by a sooner start
      this.startAt = null
      this.timer = null
      if (!this.running) this.kick()
    }
    // 0: the next microtask, not now: the other meters of the same request hand in their
    // rows within the same tick, and one INSERT instead of two saves a round in chDB.
    if (ms > 0) this.timer = setTimeout(start, ms)
    else queueMicrotask(start)
  }

  private kick(): void {
    const batch = this.pending
    if (!batch) return
    this.pending = null
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.startAt = null
    this.running = this.insert(batch).finally(() => {
      this.running = null
      // What gathered meanwhile starts when its own linger ends, not the moment this INSERT
      // does: under a steady stream of rows nobody waits for (delivery results), starting at
      // once wrote one small INSERT after another (~50 rows each, a part per ~30 ms).
      const next = this.pending
      if (next) this.startWithin(Math.max(0, next.dueAt - performance.now()))
    })
  }

  private async insert(batch: Pending): Promise<void> {
    const started = performance.now()
    try {
      // Split very large accumulations so a single INSERT stays bounded in memory.
      let i = 0
      while (i < batch.chunks.length) {
        const from = i
        let n = 0
        while (i < batch.chunks.length && (n === 0 || n < this.maxRows)) {
          n += batch.counts[i]!
          i++
        }
        // The writes' pieces as they are: a transport joins them only if it must.
        const parts = batch.chunks.slice(from, i).flatMap(bodyParts)
        await this.sql.insert(this.table, parts, this.insertOptions)
        if (this.stored) this.stored(parts, joinRows(batch.companions.slice(from, i)))
      }
      const ms = performance.now() - started
      this.stats.inserts++
      this.stats.rows += batch.rows
      this.stats.lastInsertMs = ms
      if (insertChannel.hasSubscribers)
        insertChannel.publish({ writer: this, table: this.table, rows: batch.rows, ms })
      for (const w of batch.waiters) w.resolve()
    } catch (err) {
      for (const w of batch.waiters) w.reject(err)
    }
  }

  /** Resolves when everything handed in so far is written (SIGTERM). */
  async flush(): Promise<void> {
    while (this.running || this.pending) {
      if (!this.running) this.kick()
      await this.running?.catch(() => {})
    }
  }
}

/** Rows given as text and as bytes, as one buffer (one copy of each). */
export function joinRows(rows: readonly Rows[]): Buffer {
  if (rows.every((r) => typeof r === 'string')) return Buffer.from(rows.join(''))
  return joinBody(rows.flatMap(bodyParts))
}
