// Creating meters: calls naming identifiers the workspace does not know queue for its
// admission lock and are served together, each admitted in arrival order, all their new
// meters one id range and one INSERT. The index the new meters join is MeterRepo's.
import { Exclusive } from '../coord/exclusive.js'
import type { Coord } from '../coord/coord.js'
import { reindex, type WorkspaceIndex } from './meter-index.js'
import { fromRow, meterLine, meterWith, type Meter, type NewMeter } from './meter-row.js'
import { chTime } from './sql.js'
import type { Store } from './store.js'

/**
 * Meters remembered as created here and not yet used by an actor (MeterRepo.takeUnused),
 * unless the owner says otherwise. The service passes the actor registry's bound: a first
 * contact of more meters than this at once (the requests queued behind one creation) made
 * the oldest forgotten ones ask the store for a history they do not have.
 */
export const DEFAULT_MAX_UNUSED = 100_000

/** One createMany call waiting for (or served under) the workspace's admission lock. */
interface Creation {
  list: NewMeter[]
  admit: Admit<string>
  resolve: (r: Created<string>[]) => void
  reject: (err: unknown) => void
  /** Why this call failed (its admission threw, or the INSERT did). */
  failed?: unknown
}

/** What creation needs of the index it adds to. */
export interface MeterIndexAccess {
  index(ws: number): Promise<WorkspaceIndex>
  /** Tells every instance these meters of the workspace changed. */
  announce(ws: number, ids: readonly number[]): Promise<void>
}

/**
 * Says, inside the lock, how many of `n` new meters (the first ones, in order) may be
 * created and why the others may not; `pending` meters admitted before it are not stored yet.
 */
export type Admit<R> = (
  n: number,
  pending: number,
) => Promise<{ allowed: number; refused: R | null }>

export type Created<R> = { meter: Meter; created: boolean } | { refused: R }

export class MeterCreation {
  /** Creations per workspace run one at a time in this process (and under a lease across). */
  private readonly creating: Exclusive
  /** Per workspace: createMany calls queued for the next turn of the admission lock. */
  private readonly waiting = new Map<number, Creation[]>()
  /** Meters created by this instance that no actor has used yet (takeUnused), oldest first. */
  private readonly unused = new Set<number>()

  constructor(
    private readonly store: Store,
    private readonly coord: Coord,
    private readonly meters: MeterIndexAccess,
    private readonly maxUnused = DEFAULT_MAX_UNUSED,
  ) {
    this.creating = new Exclusive(coord, {
      ttlMs: 10_000,
      pollMs: 10,
      attempts: 500,
      timeout: () => new Error('timed out waiting for the meter creation lock'),
    })
  }

  /**
   * Creates the meters whose identifiers do not exist yet, in one step: one lock, one
   * existence check, one admission for all of them, one id range, one INSERT. `admit(n)`
   * runs inside the lock with the number of new meters and says how many of them (the
   * first ones, in order) may be created, and why the others may not; `pending` meters
   * admitted before it (same turn, below) are not stored yet, so a count of the store must
   * add them.
   *
   * Calls that arrive while another holds the workspace's lock are served together when it
   * is free: each is admitted in arrival order exactly as alone (a later one sees the
   * meters an earlier one creates as existing), and all their meters are one INSERT. Eight
   * requests of first contact queued one INSERT each behind the lock, and the convoy kept
   * their readings INSERTs from joining too.
   */
  createMany<R extends string>(
    ws: number,
    list: NewMeter[],
    admit: Admit<R>,
  ): Promise<Created<R>[]> {
    return new Promise((resolve, reject) => {
      const call = { list, admit, resolve, reject } as unknown as Creation
      const waiting = this.waiting.get(ws)
      if (waiting) return void waiting.push(call)
      const calls = [call]
      this.waiting.set(ws, calls)
      // Whoever queues behind this lock run joins `calls` until the lock is ours.
      this.admission(ws, async () => {
        if (this.waiting.get(ws) === calls) this.waiting.delete(ws)
        await this.createLocked(ws, calls)
      }).catch((err: unknown) => {
        // The lock may never have been ours (a lease timeout): later calls start a new turn.
        if (this.waiting.get(ws) === calls) this.waiting.delete(ws)
        for (const c of calls) c.reject(err)
      })
    })
  }

  /** Runs `fn` holding the workspace's meter admission lock (in-process chain + coord lease). */
  admission<T>(ws: number, fn: () => Promise<T>): Promise<T> {
    return this.creating.run(`meter-create:${ws}`, fn)
  }

  /** Serves `calls` in order under the lock: their new meters are one id range, one INSERT. */
  private async createLocked(ws: number, calls: Creation[]): Promise<void> {
    const idx = await this.meters.index(ws)
    if (this.coord.kind === 'redis') await this.catchUp(ws, idx, calls)
    // Identifier → the call that creates it (a later call finds it taken, as if stored).
    const createdBy = new Map<string, number>()
    const refused: (string | null)[] = []
    const made: NewMeter[] = []
    for (const [i, c] of calls.entries()) {
      refused.push(null)
      const named = new Set<string>()
      const unknown: NewMeter[] = []
      for (const f of c.list) {
        const id = f.meter_identifier
        if (idx.byIdentifier.has(id) || createdBy.has(id) || named.has(id)) continue
        named.add(id)
        unknown.push(f)
      }
      if (!unknown.length) continue
      try {
        const a = await c.admit(unknown.length, made.length)
        refused[i] = a.refused
        const allowed = Math.max(0, Math.min(a.allowed, unknown.length))
        for (let k = 0; k < allowed; k++) {
          made.push(unknown[k]!)
          createdBy.set(unknown[k]!.meter_identifier, i)
        }
      } catch (err) {
        c.failed = err
      }
    }
    try {
      if (made.length) await this.insertNew(ws, idx, made)
    } catch (err) {
      // Only the calls naming a meter of this INSERT fail: the others' meters exist.
      for (const c of calls)
        if (c.list.some((f) => createdBy.has(f.meter_identifier))) c.failed ??= err
    }
    calls.forEach((c, i) => {
      if (c.failed !== undefined) return c.reject(c.failed)
      c.resolve(
        c.list.map((f) => {
          const m = idx.byIdentifier.get(f.meter_identifier)
          if (m) return { meter: m, created: createdBy.get(f.meter_identifier) === i }
          return { refused: refused[i]! }
        }),
      )
    })
  }

  /** With several instances: meters another one created since our index was loaded. */
  private async catchUp(ws: number, idx: WorkspaceIndex, calls: Creation[]): Promise<void> {
    const unknown = new Set<string>()
    for (const c of calls)
      for (const f of c.list)
        if (!idx.byIdentifier.has(f.meter_identifier)) unknown.add(f.meter_identifier)
    if (!unknown.size) return
    // Which of them have a row at all: one column, no FINAL (the table is sorted by id, so
    // either way every row of the workspace is read, and FINAL over all columns cost ~40 ms
    // a call in the provisioning bench with Redis, inside the creation lock). Most are new;
    // the rows of the others are then read by their ids.
    const ids = await this.store.sql.query<{ id: number | string }>(
      'SELECT DISTINCT id FROM meters WHERE workspace_id = {ws:UInt64} AND meter_identifier IN {i:Array(String)}',
      { ws, i: [...unknown] },
    )
    if (!ids.length) return
    const rows = await this.store.sql.query(
      'SELECT * FROM meters FINAL WHERE workspace_id = {ws:UInt64} AND id IN {ids:Array(UInt64)} AND deleted = 0',
      { ws, ids: ids.map((r) => Number(r.id)) },
    )
    for (const r of rows) reindex(idx, fromRow(r))
  }

  /** One id range, one INSERT; then the index and every instance know the new meters. */
  private async insertNew(ws: number, idx: WorkspaceIndex, made: NewMeter[]): Promise<void> {
    const first = await this.store.nextIds('meters', made.length)
    const version = await this.store.sharedVersion()
    const now = new Date()
    const created_at = now.toISOString()
    const createdAt = chTime(now)
    const meters = made.map((f, i) => meterWith(f, first + i, ws, created_at))
    let body = ''
    for (const m of meters) body += meterLine(m, version, 0, createdAt)
    await this.store.sql.insert('meters', body)
    for (const m of meters) {
      reindex(idx, m)
      this.unused.add(m.id)
    }
    // Forgetting the oldest only costs their first actors a look-up in the store.
    for (const id of this.unused) {
      if (this.unused.size <= this.maxUnused) break
      this.unused.delete(id)
    }
    await this.meters.announce(
      ws,
      meters.map((m) => m.id),
    )
  }

  /**
   * Whether `id` was created by this instance and no actor has used it since (true once):
   * then nothing is stored for it, and its first actor starts with an empty, complete
   * window instead of asking the store. When 8 requests name the same 500 new meters, the
   * ones served after the creating request used to load the history of every meter the
   * creator's actors had not yet taken up (four queries over 500 meters, each time).
   */
  takeUnused(id: number): boolean {
    return this.unused.delete(id)
  }
}
