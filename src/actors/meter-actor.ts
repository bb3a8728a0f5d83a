// One actor per meter: its readings are handled one at a time in recorded_at order, so
// idempotency, quality flags and status changes never race. The actor keeps a window of
// recent readings (MeterTimeline), sized in time and count, and knows from which recorded_at
// on (per kind) the window holds everything stored. A reading inside that complete part —
// also a late one — is checked for duplicates and flagged from the window alone; only older
// readings ask ClickHouse (batched with the other meters of the tick), which has the final
// word. A turn ends only after its rows are stored. A turn is a sequence of phases (dedupe,
// flag, restate, write, settle): those that touch the actor's state are methods below, those
// that work on the turn alone are in turn-phases.ts; turns.ts runs each phase for many actors.
import type { Meter } from '../store/meter-row.js'
import type { BodyWriter } from '../store/body-writer.js'
import type { FeedRows } from '../store/feed-rows.js'
import { qualityContext } from '../domain/quality-context.js'
import type { MeterHistory } from '../store/history.js'
import type { ReadingKey } from '../store/history-rows.js'
import { rowHeads, writeReadingRow, type RowHeads, type RowOut } from '../store/reading-row.js'
import {
  KINDS,
  NEIGHBOURHOOD,
  type Kind,
  type MeterQualityContext,
  type QualityFlag,
  type TimelineReading,
} from './quality/index.js'
import { MeterTimeline, NOTHING_DROPPED } from './timeline.js'
import {
  noteLine,
  notedRows,
  readNote,
  type NoteChanges,
  type NotedStatus,
} from './handover-note.js'
import type { ActorEnv } from './actor-env.js'
import type { ActorReading, Joined } from './actor-reading.js'
import { statusChanged, type NewestStatus, type StatusChange } from './status-change.js'
import { append, NONE, readingKey } from './turn-lists.js'

/**
 * The window keeps the readings of the last WINDOW_SPAN_MS per kind and the NEIGHBOURHOOD
 * (97) valid ones before them, at most WINDOW_MAX: a reading that arrives up to that late,
 * e.g. from a request that overtook another or a gateway replaying hours of buffer, needs
 * no store round trip. WINDOW_MAX holds that for a meter reporting every minute (360 + 97);
 * at 256 a reading 3 hours late asked the store for its neighbours. About 100 bytes per
 * reading held, ~1 KiB per meter besides (docs/benchmarks.md, "Memory per meter"); the
 * registry's budget of held readings bounds the total.
 */
export const WINDOW_SPAN_MS = 6 * 3_600_000
export const WINDOW_MAX = 512

/**
 * One turn of one meter: the readings of the requests that joined it (refs renumbered), and
 * what each phase found. The phases are methods of the actor and functions of
 * turn-phases.ts; `runTurns` (turns.ts) runs each phase for many actors at once, so their
 * look-ups share queries and their rows one write.
 */
export interface Turn {
  actor: MeterActor
  meter: Meter
  /** The window this turn works on (loaded first when the actor holds none). */
  tl: MeterTimeline | null
  readings: ActorReading[]
  /** Readings that are new after dedupe (and, once flagged, those stored). */
  created: ActorReading[]
  /** Readings the window cannot rule out as stored: ClickHouse decides. */
  ask: ActorReading[] | null
  rows: RowOut[]
  /** Flags changed on neighbours, by key. */
  changed: Map<string, QualityFlag[]> | null
  /** Stored neighbours whose flags changed: re-versioned from their full rows. */
  restate: ReadingKey[]
  status: StatusOut | null
  /** Its rows go into a hand-over note (`keepNote`; under locks only). */
  noting: boolean
  /** Set by the phase that failed: nothing of this turn may count as stored. */
  failed?: unknown
}

/** Status reports of a turn's created readings; the newest one is the meter's status. */
export interface StatusOut {
  rows: string
  count: number
  versions: number[]
  newest: NewestStatus | null
}

const byTimeAndKind = (a: ActorReading, b: ActorReading) =>
  a.recordedAt - b.recordedAt || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)

export class MeterActor {
  private timeline: MeterTimeline | null = null
  // Per kind, fields of the actor itself, not a record each: a turn reads them for every
  // meter of a request, and a record of its own was one more object to bring into the
  // cache (settle's line reading `completeAfter` was ~1.5 % of the gateway's main thread).
  /** Per kind: the newest recorded_at stored. */
  private latestC = -Infinity
  private latestS = -Infinity
  private status: { statuses: string[]; reportedAt: number } | null = null
  private meter: Meter
  /** When the registry last handed this actor readings (its LRU order). */
  lastUsed = 0
  /** Created here, unused by any actor before, and no turn has begun yet: nothing is stored. */
  fresh: boolean
  /** Change counter seen last under the meter's lock (cluster). */
  seen: string | null = null
  /** Per kind: the window holds every stored reading with recorded_at after this. */
  private completeAfterC = Infinity
  private completeAfterS = Infinity
  /**
   * Per kind: the window also holds every VALID reading stored at or before completeAfter
   * (what it dropped were invalid ones, or the store has fewer than NEIGHBOURHOOD valid
   * ones), so a reading there needs no store look-up even with fewer than NEIGHBOURHOOD
   * valid ones held. A meter whose readings are never valid (no unit) asked the store on
   * every turn once its window had dropped one.
   */
  private validCompleteC = false
  private validCompleteS = false
  /** A turn of this actor is running (turns of one meter never overlap). */
  busy = false
  /** Requests waiting for the next turn, which they will share (registry.ts). */
  waiting: Joined[] | null = null

  constructor(
    meter: Meter,
    private readonly env: ActorEnv,
    /** A meter created here that no actor has used (ActorEnv.takeUnused): no history to load. */
    fresh: boolean,
  ) {
    this.meter = meter
    this.fresh = fresh
    if (fresh) {
      this.timeline = new MeterTimeline(this.context([]))
      this.completeAfterC = this.completeAfterS = -Infinity
      this.validCompleteC = this.validCompleteS = true
    }
  }

  private latest(k: Kind): number {
    return k === 'saldo' ? this.latestS : this.latestC
  }

  private completeAfter(k: Kind): number {
    return k === 'saldo' ? this.completeAfterS : this.completeAfterC
  }

  private setCompleteAfter(k: Kind, t: number): void {
    if (k === 'saldo') this.completeAfterS = t
    else this.completeAfterC = t
  }

  private validComplete(k: Kind): boolean {
    return k === 'saldo' ? this.validCompleteS : this.validCompleteC
  }

  private setValidComplete(k: Kind, v: boolean): void {
    if (k === 'saldo') this.validCompleteS = v
    else this.validCompleteC = v
  }

  get meterId(): number {
    return this.meter.id
  }

  /** Turns running or waiting (the registry's idle test and the mailbox-depth metric). */
  get depth(): number {
    return (this.busy ? 1 : 0) + (this.waiting ? 1 : 0)
  }

  private context(exchanges: MeterHistory['exchanges']): MeterQualityContext {
    return qualityContext(
      this.meter,
      exchanges.map((e) => ({
        exchangedAt: e.exchanged_at,
        oldFinalValue: e.old_final_value,
        newInitialValue: e.new_initial_value,
      })),
    )
  }

  private exchanges: MeterHistory['exchanges'] = []

  /**
   * Starts a turn with the newest meter settings. A change of settings (rollover_max,
   * unit, ...) rebuilds the quality context over the readings held.
   */
  begin(meter: Meter, readings: ActorReading[]): Turn {
    this.fresh = false
    if (meter !== this.meter) {
      const kept = this.timeline?.readings() ?? null
      this.meter = meter
      if (kept) this.timeline = new MeterTimeline(this.context(this.exchanges), kept)
    }
    return {
      actor: this,
      meter,
      tl: this.timeline,
      readings,
      // Shared and frozen until something is appended (`append`): a turn's three empty
      // arrays were three more objects per meter of every request, alive through its INSERT.
      created: NONE,
      ask: null,
      rows: NONE,
      changed: null,
      restate: NONE,
      status: null,
      noting: false,
    }
  }

  /** Loads the window from the store (a turn started without one). */
  async hydrate(turn: Turn): Promise<void> {
    const h = await this.env.history.load(this.meter.workspace_id, this.meter.id)
    this.exchanges = h.exchanges
    this.latestC = h.latest.consumption
    this.latestS = h.latest.saldo
    this.status = h.status
      ? { statuses: h.status.statuses, reportedAt: Date.parse(h.status.reported_at) }
      : null
    turn.tl = this.timeline = new MeterTimeline(this.context(h.exchanges), h.window)
    this.validCompleteC = this.validCompleteS = false
    // The loaded rows are the newest of each kind, complete from the oldest one on; where
    // they are all the meter has of a kind, as for a new meter, the window alone decides.
    // (Without that, every meter with fewer than NEIGHBOURHOOD valid readings of a kind
    // asked the store for its neighbours on its first turn after a restart.)
    for (const k of KINDS) {
      if (h.whole[k]) {
        this.setCompleteAfter(k, -Infinity)
        this.setValidComplete(k, true)
        continue
      }
      let oldest = Infinity
      for (const r of h.window) if (r.kind === k && r.recordedAt < oldest) oldest = r.recordedAt
      this.setCompleteAfter(k, oldest === Infinity ? -Infinity : oldest - 1)
    }
  }

  /**
   * True when the window alone gives exact flags for a reading at t: for each kind it holds
   * everything stored after `completeAfter`, and within that NEIGHBOURHOOD valid readings
   * before t (or the meter's whole history).
   */
  private windowKnows(tl: MeterTimeline, t: number): boolean {
    for (const k of KINDS) {
      const after = this.completeAfter(k)
      if (after === -Infinity) continue
      if (!(t > after)) return false
      if (!this.validComplete(k) && tl.validBetween(k, after + 1, t) < NEIGHBOURHOOD) return false
    }
    return true
  }

  /** Readings held in the window (the registry's memory budget). */
  get held(): number {
    return this.timeline?.size ?? 0
  }

  /** Drops everything cached; the next turn reloads from the store. */
  reset(): void {
    this.timeline = null
    this.behindSince = null
    this.behindNote = null
    this.noted = null
  }

  /** Set by `behind`: the next turn first reads what other instances wrote since this version. */
  private behindSince: number | null = null
  /** Set by `behindBy`: what another instance wrote, from its hand-over note. */
  private behindNote: NoteChanges | null = null
  /** The rows the last turn wrote, as a note line's rows (`keepNote`); null once taken. */
  private noted: string | null = null

  /**
   * As `behind`, from a hand-over note (handover-note.ts) instead of the store: false where
   * there is no window or the note cannot be read (then `behind` or a reload).
   */
  behindBy(note: string): boolean {
    if (!this.timeline) return false
    this.behindNote = readNote(note)
    return this.behindNote !== null
  }

  /** Phase 4: this turn's rows for its hand-over note line, where it has one. */
  keepNote(turn: Turn): void {
    if (turn.noting) this.noted = notedRows(turn.rows)
  }

  /** The hand-over note line of the turn that just ended (its rows, the status now). */
  note(): string | null {
    const rows = this.noted
    this.noted = null
    if (rows === null) return null
    const s = this.status
    return noteLine(s, rows)
  }

  /**
   * Other instances wrote rows of this meter since this actor's last turn, every one of them
   * versioned above `since` (meter-locks.ts): the next turn reads those rows into the window
   * (`catchUp`) instead of reloading it. False where there is no window to bring up to date.
   */
  behind(since: number): boolean {
    if (!this.timeline) return false
    this.behindSince = since
    return true
  }

  /**
   * Phase 0 for an actor that is `behind`: the rows other instances wrote since, into the
   * window with their stored flags (new readings, and neighbours they re-versioned), and the
   * meter's latest status. Null when there is nothing to catch up on.
   */
  catchUp(turn: Turn): Promise<void> | null {
    const note = this.behindNote
    if (note) {
      this.behindNote = this.behindSince = null
      this.apply(turn.tl!, note.rows, note.status)
      return null
    }
    const since = this.behindSince
    if (since === null) return null
    this.behindSince = null
    const { workspace_id: ws, id } = this.meter
    // Rows at or before completeAfter are not the window's to hold: not read.
    const after = Math.min(this.completeAfterC, this.completeAfterS)
    return this.env.history.changes(ws, id, since, after).then((c) => {
      const s = c.status
      this.apply(
        turn.tl!,
        c.rows,
        s ? { statuses: s.statuses, reportedAt: Date.parse(s.reported_at) } : null,
      )
    })
  }

  private apply(tl: MeterTimeline, rows: TimelineReading[], status: NotedStatus | null): void {
    for (const r of rows) {
      if (r.kind === 'saldo') {
        if (r.recordedAt > this.latestS) this.latestS = r.recordedAt
      } else if (r.recordedAt > this.latestC) this.latestC = r.recordedAt
      // Before the window's complete part (the other kind's may start earlier): not held,
      // and the window no longer vouches for every valid reading there.
      if (!(r.recordedAt > this.completeAfter(r.kind))) {
        this.setValidComplete(r.kind, false)
        continue
      }
      tl.refresh(r)
    }
    this.status = status ? { statuses: [...status.statuses], reportedAt: status.reportedAt } : null
  }

  /**
   * Phase 1, dedupe: the same identity twice in this turn (adjacent once sorted) or in the
   * window is a duplicate. A reading older than the newest stored of its kind and outside
   * the window's complete part goes to `ask` (ClickHouse has the final word).
   */
  dedupe(turn: Turn): void {
    const tl = turn.tl!
    const readings = turn.readings
    const sorted = readings.length > 1 ? [...readings].sort(byTimeAndKind) : readings
    let prev: ActorReading | null = null
    for (const r of sorted) {
      const again = prev !== null && prev.recordedAt === r.recordedAt && prev.kind === r.kind
      prev = r
      // Newer than anything stored (`latest`): not in the window either, which is not read
      // (most readings; the window is the actor's memory least likely to be in a cache).
      const known = r.recordedAt <= this.latest(r.kind)
      if (again || (known && tl.has(r.kind, r.recordedAt))) {
        r.verdict = 'duplicate'
        continue
      }
      // Newer than anything stored, or inside the window's complete part: the window knows.
      if (known && r.recordedAt <= this.completeAfter(r.kind)) (turn.ask ??= []).push(r)
      turn.created = append(turn.created, r)
    }
  }

  /** Dedupe's store half: the asked readings ClickHouse holds already are duplicates. */
  dropStored(turn: Turn, stored: Set<string>): void {
    const created: ActorReading[] = []
    for (const r of turn.created) {
      if (stored.has(readingKey(r.kind, r.recordedAt))) r.verdict = 'duplicate'
      else created.push(r)
    }
    turn.created = created
  }

  /**
   * Exact flags need each reading's stored neighbours in the window: the times of those
   * the window cannot vouch for, to load from the store (merged across meters).
   */
  far(turn: Turn): number[] {
    const tl = turn.tl!
    const out: number[] = []
    for (const r of turn.created) if (!this.windowKnows(tl, r.recordedAt)) out.push(r.recordedAt)
    return out
  }

  /** Loads stored neighbours of the `far` times into the window (their stored flags kept). */
  addNeighbours(turn: Turn, rows: TimelineReading[], far: readonly number[]): void {
    turn.tl!.load(rows)
    // Fewer than NEIGHBOURHOOD valid readings of a kind before the earliest far time: the
    // store holds no other valid one before it, and the window holds all after completeAfter.
    const t0 = Math.min(...far)
    for (const k of KINDS) {
      if (!(t0 > this.completeAfter(k))) continue
      let before = 0
      for (const r of rows)
        if (r.kind === k && r.recordedAt < t0 && r.canonicalValue !== null && !r.unitMismatch)
          before++
      if (before < NEIGHBOURHOOD) this.setValidComplete(k, true)
    }
  }

  /** Phase 4, write (this turn's part): the readings rows as TabSeparated lines, into `out`. */
  body(turn: Turn, out: BodyWriter): void {
    const carried = this.env.store.rollupFedApart
    const heads = this.rowHeads()
    for (const row of turn.rows) writeReadingRow(out, heads, row, carried)
  }

  /** The same rows' rollup feed rows, where the rollup is fed apart (Store.rollupFedApart). */
  feedRows(turn: Turn, out: FeedRows): void {
    const { workspace_id: ws, id } = this.meter
    for (const row of turn.rows) out.row(ws, id, row)
  }

  private heads: RowHeads | null = null

  /** The start of this meter's rows (its workspace and id never change). */
  private rowHeads(): RowHeads {
    return (this.heads ??= rowHeads(this.meter.workspace_id, this.meter.id))
  }

  /**
   * After the write: the window keeps what the store now holds, trimmed to its span, and
   * the meter's status moves to the newest report (the event to emit, if it changed).
   */
  settle(turn: Turn): StatusChange | null {
    const tl = turn.tl!
    for (const r of turn.created)
      if (r.kind === 'saldo') {
        if (r.recordedAt > this.latestS) this.latestS = r.recordedAt
      } else if (r.recordedAt > this.latestC) this.latestC = r.recordedAt
    const w = this.env.window
    const consumption = tl.validCount('consumption')
    const saldo = tl.validCount('saldo')
    const dropped = tl.retain(w?.spanMs ?? WINDOW_SPAN_MS, w?.maxPerKind ?? WINDOW_MAX)
    if (dropped !== NOTHING_DROPPED)
      for (const k of KINDS) {
        if (dropped[k] > this.completeAfter(k)) this.setCompleteAfter(k, dropped[k])
        // A valid reading dropped: the window no longer holds them all (retain keeps at
        // least NEIGHBOURHOOD valid ones, so the count in windowKnows answers again).
        if (tl.validCount(k) < (k === 'saldo' ? saldo : consumption))
          this.setValidComplete(k, false)
      }

    const newest = turn.status?.newest
    if (!newest || (this.status && newest.reportedAt <= this.status.reportedAt)) return null
    const before = this.status
    this.status = { statuses: newest.statuses, reportedAt: newest.reportedAt }
    return statusChanged(turn.meter, before, newest)
  }
}
