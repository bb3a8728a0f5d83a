// Meters: versioned rows in ClickHouse, served from a per-workspace in-memory index so the
// ingest path resolves identifiers without a query. Writes update the local index and tell
// other instances (coord pub/sub) which meters changed; theirs take those rows (`heard`).
import type { Coord } from '../coord/coord.js'
import { Generations } from '../coord/generations.js'
import { GroupCommit } from './group-commit.js'
import { MeterCreation, type Admit, type Created } from './meter-creation.js'
import { reindex, unindex, type WorkspaceIndex } from './meter-index.js'
import { fromRow, meterLine, meterWith, type Meter, type NewMeter } from './meter-row.js'
import { chTime, type Sql } from './sql.js'
import type { Store } from './store.js'

export class MeterRepo {
  private readonly sql: Sql
  private readonly indexes = new Map<number, Promise<WorkspaceIndex>>()
  /** Per workspace: other instances' changes being applied, one after another. */
  private readonly applying = new Map<number, Promise<void>>()
  private readonly creation: MeterCreation
  /** Workspace indexes loaded whole (tests and probes; as HistoryLoader.queries). */
  wholeLoads = 0
  /**
   * Changes of single meters (save, delete): concurrent admin calls share one INSERT. An
   * INSERT per call wrote a part per call (~15–25 ms of chDB CPU each on the bench disk).
   */
  private readonly changes: GroupCommit

  /**
   * `maxUnused`: how many meters created here are remembered until their first actor, which
   * then needs no history from the store (meter-creation.ts).
   */
  constructor(
    private readonly store: Store,
    private readonly coord: Coord,
    opts: { maxUnused?: number } = {},
  ) {
    this.sql = store.sql
    this.changes = new GroupCommit(store.sql, 'meters')
    this.generations = new Generations(coord, 'meters')
    this.creation = new MeterCreation(
      store,
      coord,
      {
        index: (ws) => this.index(ws),
        announce: (ws, ids) => this.announce(ws, ids),
      },
      opts.maxUnused,
    )
  }

  private readonly instance = `${process.pid}-${Math.random().toString(36).slice(2)}`
  private readonly generations: Generations

  async init(): Promise<void> {
    await this.coord.subscribe('meters', (msg) => this.heard(msg))
  }

  /**
   * Another instance changed meters. Its message names them and the generation its change
   * made: the workspace's index takes those meters' rows from the store. A whole reload
   * of a workspace of 320,000 meters took ~1.8 s, every request of the workspace waiting,
   * and another instance's first contacts made one per creation. A message naming no
   * meters (an older release) drops the index; a message missed shows as a generation the
   * index never reached (`Generations.stale`), and the index reloads whole.
   */
  private heard(msg: string): void {
    const [from, wsText, genText, runs] = msg.split(':')
    if (from === this.instance) return
    const ws = Number(wsText)
    const gen = Number(genText)
    if (!runs || !Number.isInteger(gen)) return void this.indexes.delete(ws)
    // One change after another per workspace, so a later change is never overwritten.
    const next = (this.applying.get(ws) ?? Promise.resolve())
      .then(() => this.apply(ws, gen, runs))
      .catch(() => void this.indexes.delete(ws))
    this.applying.set(ws, next)
    void next.then(() => {
      if (this.applying.get(ws) === next) this.applying.delete(ws)
    })
  }

  private async apply(ws: number, gen: number, runs: string): Promise<void> {
    const loaded = this.indexes.get(ws)
    // Not loaded: its next use loads it whole, this change included.
    if (!loaded) return
    const idx = await loaded
    if (gen <= this.generations.seenGen(ws)) return
    const { where, params } = idRunsWhere(runs)
    const rows = await this.sql.query(
      `SELECT * FROM meters FINAL WHERE workspace_id = {ws:UInt64} AND (${where})`,
      { ...params, ws },
    )
    // Dropped meanwhile: its reload reads the store after this change.
    if (this.indexes.get(ws) !== loaded) return
    for (const r of rows) {
      const m = fromRow(r)
      if (Number(r.deleted)) unindex(idx, m)
      else reindex(idx, m)
    }
    this.generations.known(ws, gen)
  }

  /** Bumps the workspace's generation and tells every instance which meters changed. */
  private async announce(ws: number, ids: readonly number[]): Promise<void> {
    const gen = await this.generations.bump(ws)
    const named = gen === null ? '' : `:${gen}:${idRuns(ids)}`
    await this.coord.publish('meters', `${this.instance}:${ws}${named}`).catch(() => {})
  }

  private async index(ws: number): Promise<WorkspaceIndex> {
    // Bounded staleness should an invalidation message be lost (coord/generations.ts).
    if (
      this.indexes.has(ws) &&
      (await this.generations.stale(ws, () => this.applying.get(ws) ?? Promise.resolve()))
    )
      this.indexes.delete(ws)
    let idx = this.indexes.get(ws)
    if (!idx) {
      idx = this.generations.loading(ws).then(() => this.load(ws))
      this.indexes.set(ws, idx)
      idx.catch(() => this.indexes.delete(ws))
    }
    return idx
  }

  private async load(ws: number): Promise<WorkspaceIndex> {
    this.wholeLoads++
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
   * existence check, one admission for all of them, one id range, one INSERT
   * (meter-creation.ts). `admit` may refuse some or all of them.
   */
  createMany<R extends string>(
    ws: number,
    list: NewMeter[],
    admit: Admit<R> = async (n) => ({ allowed: n, refused: null }),
  ): Promise<Created<R>[]> {
    return this.creation.createMany(ws, list, admit)
  }

  /**
   * Saves a meter going back to `active` unless `admit` refuses (the plan limit): under the
   * same lock as creations, so a reactivation and a new meter never both take the last slot.
   */
  async reactivate<R extends string>(m: Meter, admit: () => Promise<R | null>): Promise<R | null> {
    return this.creation.admission(m.workspace_id, async () => {
      const refused = await admit()
      if (refused === null) await this.save(m)
      return refused
    })
  }

  /** Whether `id` was created here and no actor has used it since (meter-creation.ts). */
  takeUnused(id: number): boolean {
    return this.creation.takeUnused(id)
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
    reindex(await this.index(m.workspace_id), m)
    await this.announce(m.workspace_id, [m.id])
    return m
  }

  async delete(m: Meter): Promise<void> {
    const version = await this.store.sharedVersion()
    await this.changes.write(meterLine(m, version, 1), 1)
    unindex(await this.index(m.workspace_id), m)
    await this.announce(m.workspace_id, [m.id])
  }
}

/** Ids as runs (`7`, `100-399`), comma-separated: a creation's ids are one range. */
function idRuns(ids: readonly number[]): string {
  const sorted = [...ids].sort((a, b) => a - b)
  const out: string[] = []
  for (let i = 0; i < sorted.length;) {
    let j = i
    while (j + 1 < sorted.length && sorted[j + 1]! <= sorted[j]! + 1) j++
    out.push(sorted[i] === sorted[j] ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`)
    i = j + 1
  }
  return out.join(',')
}

/** The condition on `id` for runs written by `idRuns`. */
function idRunsWhere(runs: string): { where: string; params: Record<string, number> } {
  const params: Record<string, number> = {}
  const where = runs
    .split(',')
    .map((run, i) => {
      const [lo, hi = lo] = run.split('-').map(Number)
      if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi))
        throw new Error(`bad id run ${run}`)
      params[`lo${i}`] = lo!
      params[`hi${i}`] = hi!
      return `id BETWEEN {lo${i}:UInt64} AND {hi${i}:UInt64}`
    })
    .join(' OR ')
  return { where, params }
}
