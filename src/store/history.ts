// What a meter actor needs from the store: its recent readings (the quality window), the
// newest recorded_at per kind (anything newer cannot be a duplicate), exchanges, the latest
// status, existence checks and neighbourhoods for late readings, and full rows to re-version.
// Every look-up is per request, not per meter: calls of many meters arriving in the same
// tick (the turns of one request start together) are merged into one query per workspace.
//
// FINAL: `existing` needs none (any version of a key means it is stored). The window,
// neighbourhood and row look-ups need the newest version of each key; they take it with
// ORDER BY version DESC LIMIT 1 BY key over the few keys of the meters asked for (validity
// does not change between versions: only neighbour flag families are ever re-versioned).
import { KINDS, type Kind, type TimelineReading } from '../domain/quality.js'
import { Coalescer } from './coalescer.js'
import {
  COLS,
  KEY_FILTER,
  keyParams,
  NEWEST,
  timelineReading,
  type ReadingKey,
} from './history-rows.js'
import type { StoredReadingRow } from './reading-row.js'
import { RECENT_MS } from './recent-first.js'
import { chTime, parseChTime, type Sql } from './sql.js'
import { latestStatusesOf, type LatestStatus } from './status.js'
import { neighbourRows } from './history-neighbours.js'

export interface MeterHistory {
  window: TimelineReading[]
  latest: { consumption: number; saldo: number }
  /** Per kind: `window` holds every stored row of it (the meter's whole history of that kind). */
  whole: { consumption: boolean; saldo: boolean }
  exchanges: {
    exchanged_at: number
    old_final_value: number | null
    new_initial_value: number | null
  }[]
  status: LatestStatus | null
}

/**
 * What other instances wrote of a meter since a row version (`HistoryLoader.changes`): the
 * newest version of every reading key they wrote or re-versioned, and the meter's latest
 * status.
 */
export interface MeterChanges {
  rows: TimelineReading[]
  status: LatestStatus | null
}

/**
 * A freshly loaded window holds the newest readings of each kind (at most this many, valid
 * or not, fewer when keys have several versions), complete from its oldest one on: a late
 * reading after that needs no store look-up (MeterActor).
 */
const HYDRATE_PER_KIND = 64

/** Rows (versions included) the window's query reads per kind, newest first. */
const WINDOW_ROWS = HYDRATE_PER_KIND * 4

const DAY = 86_400_000
/**
 * How far back from the clock the window's query reads before it reads further: the last
 * week (RECENT_MS), then 90 days, then everything. Sorting a meter's whole history is what a
 * cold window cost: 500 meters with a year of 15-minute readings each took ~1 s of chDB
 * (~1.5 s of CPU) against ~0.15 s for their last week (scratch, session 31). A week holds
 * WINDOW_ROWS of anything reporting at least every 39 minutes; 90 days of anything hourly.
 */
const WINDOW_SPANS = [RECENT_MS, 90 * DAY, Infinity]

export class HistoryLoader {
  private readonly windows = new Coalescer<number, MeterHistory>((ws, ids) => this.fetch(ws, ids))
  private readonly stored = new Coalescer<{ meterId: number; keys: ReadingKey[] }, Set<string>>(
    (ws, asks) => this.fetchExisting(ws, asks),
  )
  private readonly around = new Coalescer<
    { meterId: number; ts: number[]; n: number },
    TimelineReading[]
  >((ws, asks) => this.fetchNeighbourhoods(ws, asks))
  private readonly full = new Coalescer<
    { meterId: number; keys: ReadingKey[] },
    StoredReadingRow[]
  >((ws, asks) => this.fetchRows(ws, asks))
  private readonly since = new Coalescer<
    { meterId: number; version: number; after: number },
    MeterChanges
  >((ws, asks) => this.fetchChanges(ws, asks))
  /** Queries sent, by look-up (metrics and tests: one per request, not per meter). */
  readonly queries = { windows: 0, existing: 0, neighbourhood: 0, rows: 0, changes: 0 }
  /**
   * Rows (versions included) the window's query reads per kind, newest first. Tests shrink
   * it, as they shrink the actors' window, so that short histories take the store paths.
   */
  windowRows = WINDOW_ROWS

  constructor(
    private readonly sql: Sql,
    /** The clock the window's first spans are measured from (only how much is read depends on it). */
    private readonly now: () => number = Date.now,
  ) {}

  /** History of one meter; calls in the same tick share one round of queries per workspace. */
  load(ws: number, meterId: number): Promise<MeterHistory> {
    return this.windows.ask(ws, meterId)
  }

  private async fetch(ws: number, asked: number[]): Promise<MeterHistory[]> {
    this.queries.windows++
    const ids = [...new Set(asked)]
    const params = { ws, ids }
    const [rows, exchanges, statuses] = await Promise.all([
      this.windowRowsOf(ws, ids),
      this.sql.query<any>(
        `SELECT meter_id, exchanged_at, old_final_value, new_initial_value FROM meter_exchanges FINAL
         WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)} ORDER BY exchanged_at`,
        params,
      ),
      latestStatusesOf(this.sql, ws, ids, this.now()),
    ])
    const out = new Map<number, MeterHistory>()
    for (const id of ids)
      out.set(id, {
        window: [],
        latest: { consumption: -Infinity, saldo: -Infinity },
        whole: { consumption: true, saldo: true },
        exchanges: [],
        status: statuses.get(id) ?? null,
      })
    for (const { kind, rows: list, whole } of rows) {
      // The rows come by meter, each key's versions newest first: the first of a key is its
      // reading, and the first of a meter its newest (`latest`).
      let last: { meter_id: unknown; recorded_at: unknown } | null = null
      for (const r of list) {
        const h = out.get(Number(r.meter_id))!
        if (last === null || last.meter_id !== r.meter_id) {
          h.latest[kind] = parseChTime(r.recorded_at)
          h.whole[kind] = whole.has(Number(r.meter_id))
        } else if (last.recorded_at === r.recorded_at) continue
        h.window.push(timelineReading(r))
        last = r
      }
    }
    for (const r of exchanges)
      out.get(Number(r.meter_id))!.exchanges.push({
        exchanged_at: parseChTime(r.exchanged_at),
        old_final_value: r.old_final_value === null ? null : Number(r.old_final_value),
        new_initial_value: r.new_initial_value === null ? null : Number(r.new_initial_value),
      })
    return asked.map((id) => out.get(id)!)
  }

  /**
   * The newest `windowRows` rows (versions included) of each kind of these meters, read over
   * WINDOW_SPANS from the clock: a (meter, kind) with that many rows in a span is done, the
   * others are asked again over the next. `whole`: the meters whose rows of the kind are all
   * there (fewer than `windowRows` in the unbounded span, counted in the same read as the
   * rows, so no merge in between can mislead).
   */
  private async windowRowsOf(
    ws: number,
    ids: number[],
  ): Promise<{ kind: Kind; rows: any[]; whole: Set<number> }[]> {
    const now = this.now()
    return Promise.all(
      KINDS.map(async (kind) => {
        const rows: any[] = []
        const whole = new Set<number>()
        let left = ids
        for (const span of WINDOW_SPANS) {
          if (!left.length) break
          const bounded = span !== Infinity
          const since = bounded ? "AND recorded_at >= {since:DateTime64(3, 'UTC')}" : ''
          const got = await this.sql.query<any>(
            `SELECT ${COLS} FROM readings
             WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)}
               AND kind = {kind:String} ${since}
             ORDER BY meter_id, recorded_at DESC, version DESC
             LIMIT ${this.windowRows} BY meter_id`,
            bounded ? { ws, ids: left, kind, since: chTime(now - span) } : { ws, ids: left, kind },
          )
          const count = new Map<number, number>()
          for (const r of got)
            count.set(Number(r.meter_id), (count.get(Number(r.meter_id)) ?? 0) + 1)
          const short = new Set<number>()
          for (const id of left) if ((count.get(id) ?? 0) < this.windowRows) short.add(id)
          if (span === Infinity) for (const id of short) whole.add(id)
          for (const r of got) if (span === Infinity || !short.has(Number(r.meter_id))) rows.push(r)
          left = span === Infinity ? [] : [...short]
        }
        return { kind, rows, whole }
      }),
    )
  }

  /**
   * The rows of one meter versioned above `version` and recorded after `after` (epoch ms;
   * -Infinity: all), each key's newest version, and its latest status: what other instances
   * wrote since this one's last turn on the meter (meter-locks.ts). Versions are not in the
   * sort key: `after` (where the actor's window starts) keeps the read to the window's span.
   */
  changes(ws: number, meterId: number, version: number, after: number): Promise<MeterChanges> {
    return this.since.ask(ws, { meterId, version, after })
  }

  private async fetchChanges(
    ws: number,
    asks: { meterId: number; version: number; after: number }[],
  ): Promise<MeterChanges[]> {
    this.queries.changes++
    const ids = [...new Set(asks.map((a) => a.meterId))]
    // Meters whose windows hold their whole history (a young meter: `after` -Infinity) are
    // read apart, so that one of them does not lift the time bound off all the others.
    const whole = asks.filter((a) => a.after === -Infinity)
    const windowed = asks.filter((a) => a.after !== -Infinity)
    const [rows, statuses] = await Promise.all([
      Promise.all(
        [whole, windowed].map((part) => (part.length ? this.changedRows(ws, part) : [])),
      ).then((parts) => parts.flat()),
      latestStatusesOf(this.sql, ws, ids, this.now()),
    ])
    const per = new Map<number, TimelineReading[]>()
    const sinceOf = new Map<number, number>()
    for (const a of asks)
      sinceOf.set(a.meterId, Math.min(sinceOf.get(a.meterId) ?? a.version, a.version))
    for (const r of rows) {
      const id = Number(r.meter_id)
      if (!(Number(r.version) > sinceOf.get(id)!)) continue
      let list = per.get(id)
      if (!list) per.set(id, (list = []))
      list.push(timelineReading(r))
    }
    return asks.map((a) => ({
      rows: per.get(a.meterId) ?? [],
      status: statuses.get(a.meterId) ?? null,
    }))
  }

  /** `fetchChanges`' rows: versioned above the asks' lowest version, after their earliest `after`. */
  private changedRows(
    ws: number,
    asks: { meterId: number; version: number; after: number }[],
  ): Promise<any[]> {
    let version = Infinity
    let after = Infinity
    for (const a of asks) {
      version = Math.min(version, a.version)
      after = Math.min(after, a.after)
    }
    const bounded = after !== -Infinity
    return this.sql.query<any>(
      `SELECT ${COLS} FROM readings
       WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)}
         AND version > {version:UInt64}
         ${bounded ? "AND recorded_at > {after:DateTime64(3, 'UTC')}" : ''}
       ${NEWEST}`,
      {
        ws,
        ids: [...new Set(asks.map((a) => a.meterId))],
        version,
        ...(bounded ? { after: chTime(after) } : {}),
      },
    )
  }

  /** Which of these (kind, recorded_at) of one meter are stored already. */
  existing(ws: number, meterId: number, keys: ReadingKey[]): Promise<Set<string>> {
    if (!keys.length) return Promise.resolve(new Set())
    return this.stored.ask(ws, { meterId, keys })
  }

  private async fetchExisting(
    ws: number,
    asks: { meterId: number; keys: ReadingKey[] }[],
  ): Promise<Set<string>[]> {
    this.queries.existing++
    const rows = await this.sql.query<{ meter_id: string; kind: string; recorded_at: string }>(
      `SELECT DISTINCT meter_id, kind, recorded_at FROM readings
       WHERE workspace_id = {ws:UInt64} AND ${KEY_FILTER}`,
      { ws, ...keyParams(asks) },
    )
    const per = new Map<number, Set<string>>()
    for (const r of rows) {
      const id = Number(r.meter_id)
      let set = per.get(id)
      if (!set) per.set(id, (set = new Set()))
      set.add(`${r.kind}:${parseChTime(r.recorded_at)}`)
    }
    return asks.map((a) => per.get(a.meterId) ?? new Set())
  }

  /**
   * Valid readings around each of the times `ts` of one meter (both kinds): `n` before and
   * `n` at or after each. One query per round of (meter, time) pairs of the whole tick.
   */
  neighbourhood(ws: number, meterId: number, ts: number[], n: number): Promise<TimelineReading[]> {
    if (!ts.length) return Promise.resolve([])
    return this.around.ask(ws, { meterId, ts, n })
  }

  private async fetchNeighbourhoods(
    ws: number,
    asks: { meterId: number; ts: number[]; n: number }[],
  ): Promise<TimelineReading[][]> {
    const out = asks.map(() => new Map<string, TimelineReading>())
    // Each round asks one time per meter: `transform` maps a meter to its time in SQL.
    const pending = asks.map((a, i) => ({ i, meterId: a.meterId, ts: [...a.ts], n: a.n }))
    while (pending.some((p) => p.ts.length)) {
      const round = new Map<number, { t: number; to: number[]; n: number }>()
      for (const p of pending) {
        if (!p.ts.length) continue
        const r = round.get(p.meterId)
        if (r && r.t === p.ts[0]) {
          r.to.push(p.i)
          r.n = Math.max(r.n, p.n)
          p.ts.shift()
        } else if (!r) {
          round.set(p.meterId, { t: p.ts.shift()!, to: [p.i], n: p.n })
        }
      }
      const ids = [...round.keys()]
      const n = Math.max(...[...round.values()].map((r) => r.n))
      const times = [...round.values()].map((r) => r.t)
      this.queries.neighbourhood++
      const rows = await neighbourRows(this.sql, ws, ids, times, n)
      for (const r of rows) {
        const tr = timelineReading(r)
        for (const i of round.get(Number(r.meter_id))!.to)
          out[i]!.set(`${tr.kind}:${tr.recordedAt}`, tr)
      }
    }
    return out.map((m) => [...m.values()])
  }

  /** Full stored rows (newest version) for re-versioning readings whose flags changed. */
  rows(ws: number, meterId: number, keys: ReadingKey[]): Promise<StoredReadingRow[]> {
    if (!keys.length) return Promise.resolve([])
    return this.full.ask(ws, { meterId, keys })
  }

  private async fetchRows(
    ws: number,
    asks: { meterId: number; keys: ReadingKey[] }[],
  ): Promise<StoredReadingRow[][]> {
    this.queries.rows++
    const rows = await this.sql.query<StoredReadingRow>(
      `SELECT * FROM readings WHERE workspace_id = {ws:UInt64} AND ${KEY_FILTER} ${NEWEST}`,
      { ws, ...keyParams(asks) },
    )
    const per = new Map<number, StoredReadingRow[]>()
    for (const r of rows) {
      const id = Number(r.meter_id)
      let list = per.get(id)
      if (!list) per.set(id, (list = []))
      list.push(r)
    }
    return asks.map((a) => per.get(a.meterId) ?? [])
  }
}
