// Meters: versioned rows in ClickHouse, served from a per-workspace in-memory index so the
// ingest path resolves identifiers without a query. Writes update the local index and tell
// other instances (coord pub/sub) to drop theirs.
import { Exclusive } from '../coord/exclusive.js'
import type { Coord } from '../coord/coord.js'
import { Generations } from '../coord/generations.js'
import { GroupCommit } from './group-commit.js'
import { fromRow, meterLine, meterWith, type Meter, type NewMeter } from './meter-row.js'
import { chTime, type Sql } from './sql.js'
import type { Store } from './store.js'

/** Meters remembered as created here and not yet used by an actor (MeterRepo.takeUnused). */
const MAX_UNUSED = 100_000

/** One createMany call waiting for (or served under) the workspace's admission lock. */
interface Creation {
  list: NewMeter[]
  admit: (n: number, pending: number) => Promise<{ allowed: number; refused: string | null }>
  resolve: (r: ({ meter: Meter; created: boolean } | { refused: string })[]) => void
  reject: (err: unknown) => void
  /** Why this call failed (its admission threw, or the INSERT did). */
  failed?: unknown
}

interface WorkspaceIndex {
  byIdentifier: Map<string, Meter>
  byId: Map<number, Meter>
}

export class MeterRepo {
  private readonly sql: Sql
  private readonly indexes = new Map<number, Promise<WorkspaceIndex>>()
  /** Creations per workspace run one at a time in this process (and under a lease across). */
  private readonly creating: Exclusive
  /** Per workspace: createMany calls queued for the next turn of the admission lock. */
  private readonly waiting = new Map<number, Creation[]>()
  /** Meters created by this instance that no actor has used yet (takeUnused), oldest first. */
  private readonly unused = new Set<number>()
  /**
   * Changes of single meters (save, delete): concurrent admin calls share one INSERT. An
   * INSERT per call wrote a part per call (~15–25 ms of chDB CPU each on the bench disk).
   */
  private readonly changes: GroupCommit

  constructor(
    private readonly store: Store,
    private readonly coord: Coord,
  ) {
    this.sql = store.sql
    this.changes = new GroupCommit(store.sql, 'meters')
    this.generations = new Generations(coord, 'meters')
    this.creating = new Exclusive(coord, {
      ttlMs: 10_000,
      pollMs: 10,
      attempts: 500,
      timeout: () => new Error('timed out waiting for the meter creation lock'),
    })
  }

  private readonly instance = `${process.pid}-${Math.random().toString(36).slice(2)}`
  private readonly generations: Generations

  async init(): Promise<void> {
    // Other instances changed a meter: drop that workspace's index; it reloads on next use.
    await this.coord.subscribe('meters', (msg) => {
      const [from, ws] = msg.split(':')
      if (from !== this.instance) this.indexes.delete(Number(ws))
    })
  }

  private async announce(ws: number): Promise<void> {
    await this.generations.bump(ws)
    await this.coord.publish('meters', `${this.instance}:${ws}`).catch(() => {})
  }

  private async index(ws: number): Promise<WorkspaceIndex> {
    // Bounded staleness should an invalidation message be lost (coord/generations.ts).
    if (this.indexes.has(ws) && (await this.generations.stale(ws))) this.indexes.delete(ws)
    let idx = this.indexes.get(ws)
    if (!idx) {
      idx = this.generations.loading(ws).then(() => this.load(ws))
      this.indexes.set(ws, idx)
      idx.catch(() => this.indexes.delete(ws))
    }
    return idx
  }

  private async load(ws: number): Promise<WorkspaceIndex> {
    const rows = await this.sql.query(
      'SELECT * FROM meters FINAL WHERE workspace_id = {ws:UInt64} AND deleted = 0',
      { ws },
    )
    const idx: WorkspaceIndex = { byIdentifier: new Map(), byId: new Map() }
    for (const r of rows) {
      const m = fromRow(r)
      idx.byIdentifier.set(m.meter_identifier, m)
      idx.byId.set(m.id, m)
    }
    return idx
  }

  /** A synchronous identifier look-up for one batch (one await instead of one per item). */
  async lookup(ws: number): Promise<(identifier: string) => Meter | null> {
    const idx = await this.index(ws)
    return (identifier) => idx.byIdentifier.get(identifier) ?? null
  }

  async byIdentifier(ws: number, identifier: string): Promise<Meter | null> {
    return (await this.index(ws)).byIdentifier.get(identifier) ?? null
  }

  async byId(ws: number, id: number): Promise<Meter | null> {
    return (await this.index(ws)).byId.get(id) ?? null
  }

  /** Any workspace's meter by id (admin API, where the path names no workspace). */
  async findAnyById(id: number): Promise<Meter | null> {
    // A meter never changes workspace: an index holding it names the one to ask (which
    // catches up first, so a meter deleted elsewhere is not found); else the store does.
    for (const [ws, idx] of this.indexes)
      if ((await idx.catch(() => null))?.byId.has(id)) return this.byId(ws, id)
    const [r] = await this.sql.query<{ workspace_id: string }>(
      'SELECT workspace_id FROM meters FINAL WHERE id = {id:UInt64} AND deleted = 0 LIMIT 1',
      { id },
    )
    return r ? this.byId(Number(r.workspace_id), id) : null
  }

  /** The workspace's meters ordered by meter_identifier. */
  async list(ws: number): Promise<Meter[]> {
    const all = [...(await this.index(ws)).byId.values()]
    return all.sort((a, b) =>
      a.meter_identifier < b.meter_identifier
        ? -1
        : a.meter_identifier > b.meter_identifier
          ? 1
          : 0,
    )
  }

  /**
   * Meters created in [from, to) that have no `meter.created` delivery stored although their
   * workspace has an enabled subscription wanting it: a process stopped between the meters
   * INSERT and the outbox INSERT (there is no transaction across the two).
   */
  async createdWithoutEvent(from: number, to: number): Promise<Meter[]> {
    // created_at is the same in every version of a meter: the window's meters are found
    // without FINAL, and FINAL then reads only their keys (1 M meters: 414-474 ms for a
    // FINAL over the whole table, 30-46 ms this way; a scratch measurement, 2026-11-25).
    const rows = await this.sql.query(
      `SELECT * FROM meters FINAL
       WHERE (workspace_id, id) IN (SELECT workspace_id, id FROM meters
               WHERE created_at >= {from:DateTime64(3, 'UTC')} AND created_at < {to:DateTime64(3, 'UTC')})
         AND deleted = 0
         AND workspace_id IN (SELECT workspace_id FROM event_subscriptions FINAL
               WHERE enabled = 1 AND (has(events, '*') OR has(events, 'meter.created'))
                 AND created_at < {to:DateTime64(3, 'UTC')})
         AND (workspace_id, id) NOT IN (
               SELECT workspace_id, JSONExtractUInt(body, 'data', 'meter', 'id') FROM event_deliveries
               WHERE event = 'meter.created' AND created_at >= {from:DateTime64(3, 'UTC')})
       ORDER BY workspace_id, id`,
      { from: chTime(from), to: chTime(to) },
    )
    return rows.map(fromRow)
  }

  /** Operational meters, counted in the store so every instance sees the same number. */
  async countOperational(ws: number): Promise<number> {
    const [r] = await this.sql.query<{ c: string }>(
      "SELECT count() AS c FROM meters FINAL WHERE workspace_id = {ws:UInt64} AND deleted = 0 AND lifecycle_state = 'active'",
      { ws },
    )
    return Number(r?.c ?? 0)
  }

  /**
   * How many more meters the plan limit lets become operational (Infinity: no limit). It
   * counts operational meters only, and `pending` ones: admitted but not stored yet
   * (createMany).
   */
  async planRoom(ws: number, limit: number | null, pending = 0): Promise<number> {
    if (limit === null) return Infinity
    return Math.max(0, limit - (await this.countOperational(ws)) - pending)
  }

  async atPlanLimit(ws: number, limit: number | null, pending = 0): Promise<boolean> {
    return (await this.planRoom(ws, limit, pending)) === 0
  }

  /**
   * Creates a meter unless its identifier exists. `admit` runs inside the creation lock,
   * after the existence check, and may refuse (plan limit, hourly cap): then nothing is
   * created and its reason is returned.
   */
  async create<R extends string>(
    ws: number,
    fields: NewMeter,
    admit: (pending: number) => Promise<R | null> = async () => null,
  ): Promise<{ meter: Meter; created: boolean } | { refused: R }> {
    const [r] = await this.createMany(ws, [fields], async (n, pending) => {
      const refused = await admit(pending)
      return refused ? { allowed: 0, refused } : { allowed: n, refused: null }
    })
    return r!
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
    admit: (n: number, pending: number) => Promise<{ allowed: number; refused: R | null }> = async (
      n,
    ) => ({
      allowed: n,
      refused: null,
    }),
  ): Promise<({ meter: Meter; created: boolean } | { refused: R })[]> {
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

  /**
   * Saves a meter going back to `active` unless `admit` refuses (the plan limit): under the
   * same lock as creations, so a reactivation and a new meter never both take the last slot.
   */
  async reactivate<R extends string>(m: Meter, admit: () => Promise<R | null>): Promise<R | null> {
    return this.admission(m.workspace_id, async () => {
      const refused = await admit()
      if (refused === null) await this.save(m)
      return refused
    })
  }

  /** Runs `fn` holding the workspace's meter admission lock (in-process chain + coord lease). */
  private admission<T>(ws: number, fn: () => Promise<T>): Promise<T> {
    return this.creating.run(`meter-create:${ws}`, fn)
  }

  /** Serves `calls` in order under the lock: their new meters are one id range, one INSERT. */
  private async createLocked(ws: number, calls: Creation[]): Promise<void> {
    const idx = await this.index(ws)
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
    const ids = await this.sql.query<{ id: number | string }>(
      'SELECT DISTINCT id FROM meters WHERE workspace_id = {ws:UInt64} AND meter_identifier IN {i:Array(String)}',
      { ws, i: [...unknown] },
    )
    if (!ids.length) return
    const rows = await this.sql.query(
      'SELECT * FROM meters FINAL WHERE workspace_id = {ws:UInt64} AND id IN {ids:Array(UInt64)} AND deleted = 0',
      { ws, ids: ids.map((r) => Number(r.id)) },
    )
    for (const r of rows) {
      const m = fromRow(r)
      idx.byIdentifier.set(m.meter_identifier, m)
      idx.byId.set(m.id, m)
    }
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
    await this.sql.insert('meters', body)
    for (const m of meters) {
      idx.byIdentifier.set(m.meter_identifier, m)
      idx.byId.set(m.id, m)
      this.unused.add(m.id)
    }
    // Forgetting the oldest only costs their first actors a look-up in the store.
    for (const id of this.unused) {
      if (this.unused.size <= MAX_UNUSED) break
      this.unused.delete(id)
    }
    await this.announce(ws)
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

  /**
   * Stores a new version of the meter and updates every instance's index. Returns the meter
   * as the index holds it now: callers make the new version by spreading the old, and it is
   * given its one shape again (`meterWith`).
   */
  async save(saved: Meter): Promise<Meter> {
    const m = meterWith(saved, saved.id, saved.workspace_id, saved.created_at)
    const version = await this.store.sharedVersion()
    await this.changes.write(meterLine(m, version), 1)
    const idx = await this.index(m.workspace_id)
    const old = idx.byId.get(m.id)
    if (old && old.meter_identifier !== m.meter_identifier)
      idx.byIdentifier.delete(old.meter_identifier)
    idx.byId.set(m.id, m)
    idx.byIdentifier.set(m.meter_identifier, m)
    await this.announce(m.workspace_id)
    return m
  }

  async delete(m: Meter): Promise<void> {
    const version = await this.store.sharedVersion()
    await this.changes.write(meterLine(m, version, 1), 1)
    const idx = await this.index(m.workspace_id)
    idx.byId.delete(m.id)
    idx.byIdentifier.delete(m.meter_identifier)
    await this.announce(m.workspace_id)
  }
}
