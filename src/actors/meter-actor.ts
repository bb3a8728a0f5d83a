// One actor per meter: its readings are handled one at a time in recorded_at order, so
// idempotency, quality flags and status changes never race. The actor keeps a window of
// recent readings (MeterTimeline), sized in time and count, and knows from which recorded_at
// on (per kind) the window holds everything stored. A reading inside that complete part —
// also a late one — is checked for duplicates and flagged from the window alone; only older
// readings ask ClickHouse (batched with the other meters of the tick), which has the final
// word. A turn ends only after its rows are stored.
import { apiError } from '../errors.js'
import type { Outbox } from '../events/outbox.js'
import type { Meter } from '../store/meters.js'
import { chTime } from '../store/sql.js'
import { deleteStatusVersions } from '../store/status.js'
import type { Store } from '../store/store.js'
import { canonicalize, isUnit, meterUnit, type Canonical } from '../domain/units.js'
import { qualityContext } from '../domain/quality-context.js'
import type { HistoryLoader, MeterHistory } from '../store/history.js'
import { Mailbox } from './mailbox.js'
import {
  NEIGHBOURHOOD,
  type Kind,
  type MeterQualityContext,
  type QualityFlag,
} from './quality/index.js'
import { MeterTimeline } from './timeline.js'

export interface ActorReading {
  /** Position in the request, to put the answer back in order. */
  ref: number
  kind: Kind
  recordedAt: number
  value: number
  unit: string | null
  /** JSON text of the raw payload. */
  rawPayload: string
  /** Device status carried by this reading, if any. */
  status: { rawFlags: string[]; statuses: string[] } | null
}

export type ActorVerdict = 'created' | 'duplicate'

interface JoinedRequest {
  meter: Meter
  readings: ActorReading[]
  resolve: (v: Map<number, ActorVerdict>) => void
  reject: (e: unknown) => void
}

export interface ActorEnv {
  /** How much a window keeps (WINDOW_SPAN_MS, WINDOW_MAX; tests shrink it to reach the store). */
  window?: { spanMs: number; maxPerKind: number }
  store: Store
  history: HistoryLoader
  /** Set on shutdown: a turn that has not started yet is refused (503). */
  stopping?: boolean
  outbox: Outbox
  /** Per-meter mutual exclusion and change counter across instances (Redis); null alone. */
  locks: MeterLocks | null
  now: () => number
}

export interface MeterLocks {
  /** Runs `fn` holding the meter's lock; `changed` says whether another instance wrote since `seen`. */
  withLock<T>(
    meterId: number,
    seen: number | null,
    fn: (changed: boolean) => Promise<T>,
  ): Promise<{ result: T; seen: number | null }>
}

const key = (kind: string, t: number) => `${kind}:${t}`

const KINDS: readonly Kind[] = ['consumption', 'saldo']
/**
 * The window keeps the readings of the last WINDOW_SPAN_MS per kind (at most WINDOW_MAX,
 * at least NEIGHBOURHOOD): a reading that arrives up to that late, e.g. from a request that
 * overtook another or a gateway replaying hours of buffer, needs no store round trip.
 * About 200 bytes per reading held (docs/benchmarks.md gives the measured memory per meter).
 */
export const WINDOW_SPAN_MS = 6 * 3_600_000
export const WINDOW_MAX = 256

/** A readings row on its way to the store. */
interface RowOut {
  kind: string
  recordedAt: string
  value: number
  unit: string | null
  canonicalValue: number | null
  canonicalUnit: string | null
  flags: string[]
  /** JSON text of the raw payload (an object is stored as its text). */
  rawJson: string
  ingestedAt: string
  version: number
}

const num = (v: number | null) => (v === null || !Number.isFinite(v) ? 'null' : String(v))
const str = (v: string | null) => (v === null ? 'null' : JSON.stringify(v))

/**
 * One JSONEachRow line, written by hand: this runs for every reading, and building an
 * object to hand to JSON.stringify cost more than the rest of the actor's turn.
 */
function rowLine(ws: number, meterId: number, r: RowOut): string {
  return (
    `{"workspace_id":${ws},"meter_id":${meterId},"kind":"${r.kind}","recorded_at":"${r.recordedAt}",` +
    `"value":${num(r.value)},"unit":${str(r.unit)},"canonical_value":${num(r.canonicalValue)},` +
    `"canonical_unit":${str(r.canonicalUnit)},"quality_flags":${r.flags.length ? JSON.stringify(r.flags) : '[]'},` +
    `"raw_payload":${r.rawJson},"ingested_at":"${r.ingestedAt}","version":${r.version}}\n`
  )
}

export class MeterActor {
  readonly mailbox = new Mailbox()
  private timeline: MeterTimeline | null = null
  private latest = { consumption: -Infinity, saldo: -Infinity }
  private status: { statuses: string[]; reportedAt: number } | null = null
  private meter: Meter
  private seen: number | null = null
  /** Per kind: the window holds every stored reading with recorded_at after this. */
  private completeAfter: Record<Kind, number> = { consumption: Infinity, saldo: Infinity }
  lastUsed = 0

  constructor(
    meter: Meter,
    private readonly env: ActorEnv,
    /** A meter created by this request has no history to load. */
    fresh: boolean,
  ) {
    this.meter = meter
    if (fresh) {
      this.timeline = new MeterTimeline(this.context([]))
      this.completeAfter = { consumption: -Infinity, saldo: -Infinity }
    }
  }

  /** Handles one request's readings of this meter; resolves after they are stored. */
  /**
   * Handles one request's readings of this meter; resolves after they are stored. Requests
   * that arrive while a turn runs wait for it, then go together as ONE turn (one write):
   * overlapping requests on the same meters cost one turn and one INSERT per round, not
   * one per request. They succeed or fail together; the first of them to carry a reading
   * gets `created`, the others `duplicate` (as one after the other would).
   */
  handle(meter: Meter, readings: ActorReading[]): Promise<Map<number, ActorVerdict>> {
    return new Promise((resolve, reject) => {
      const entry = { meter, readings, resolve, reject }
      if (this.waiting) {
        this.waiting.push(entry)
        return
      }
      const group = (this.waiting = [entry])
      this.mailbox
        .post(() => {
          if (this.waiting === group) this.waiting = null
          return this.joinedTurn(group)
        })
        .catch(() => {}) // each entry was rejected itself
    })
  }

  /** Requests waiting for the next turn, which they will share. */
  private waiting: JoinedRequest[] | null = null

  private async joinedTurn(group: JoinedRequest[]): Promise<void> {
    try {
      if (this.env.stopping) throw apiError('Unavailable', 'Shutting down; retry the request.')
      // The newest meter settings; refs renumbered across requests and mapped back.
      const meter = group[group.length - 1]!.meter
      let readings: ActorReading[]
      if (group.length === 1) readings = group[0]!.readings
      else {
        readings = []
        for (const [g, e] of group.entries())
          for (const r of e.readings) readings.push({ ...r, ref: r.ref * group.length + g })
      }
      const verdicts = await this.lockedTurn(meter, readings)
      if (group.length === 1) return group[0]!.resolve(verdicts)
      const split = group.map(() => new Map<number, ActorVerdict>())
      for (const [ref, v] of verdicts)
        split[ref % group.length]!.set(Math.floor(ref / group.length), v)
      group.forEach((e, g) => e.resolve(split[g]!))
    } catch (err) {
      for (const e of group) e.reject(err)
    }
  }

  private async lockedTurn(
    meter: Meter,
    readings: ActorReading[],
  ): Promise<Map<number, ActorVerdict>> {
    const locks = this.env.locks
    if (!locks) return this.turn(meter, readings)
    const r = await locks.withLock(meter.id, this.seen, (changed) => {
      if (changed) this.timeline = null
      return this.turn(meter, readings)
    })
    this.seen = r.seen
    return r.result
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

  private async hydrate(): Promise<MeterTimeline> {
    const h = await this.env.history.load(this.meter.workspace_id, this.meter.id)
    this.exchanges = h.exchanges
    this.latest = { ...h.latest }
    this.status = h.status
      ? { statuses: h.status.statuses, reportedAt: Date.parse(h.status.reported_at) }
      : null
    this.timeline = new MeterTimeline(this.context(h.exchanges), h.window)
    // The loaded rows are the newest of each kind, complete from the oldest one on.
    for (const k of KINDS) {
      let oldest = Infinity
      for (const r of h.window) if (r.kind === k && r.recordedAt < oldest) oldest = r.recordedAt
      this.completeAfter[k] = oldest === Infinity ? -Infinity : oldest - 1
    }
    return this.timeline
  }

  /**
   * True when the window alone gives exact flags for a reading at t: for each kind it holds
   * everything stored after `completeAfter`, and within that NEIGHBOURHOOD valid readings
   * before t (or the meter's whole history).
   */
  private windowKnows(tl: MeterTimeline, t: number): boolean {
    for (const k of KINDS) {
      const after = this.completeAfter[k]
      if (after === -Infinity) continue
      if (!(t > after) || tl.validBetween(k, after + 1, t) < NEIGHBOURHOOD) return false
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
  }

  private async turn(meter: Meter, readings: ActorReading[]): Promise<Map<number, ActorVerdict>> {
    if (meter !== this.meter) {
      // The meter's settings changed (rollover_max, unit, ...): rebuild the quality context.
      const kept = this.timeline?.readings() ?? null
      this.meter = meter
      if (kept) this.timeline = new MeterTimeline(this.context(this.exchanges), kept)
    }
    const tl = this.timeline ?? (await this.hydrate())
    const ws = meter.workspace_id
    const verdicts = new Map<number, ActorVerdict>()
    const sorted =
      readings.length > 1
        ? [...readings].sort(
            (a, b) =>
              a.recordedAt - b.recordedAt || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0),
          )
        : readings

    // Duplicates: same identity twice in this request (adjacent once sorted), in the
    // window, or (older than the newest stored of its kind and outside the window) in
    // ClickHouse.
    const fresh: ActorReading[] = []
    let ask: ActorReading[] | null = null
    let prev: ActorReading | null = null
    for (const r of sorted) {
      const again = prev !== null && prev.recordedAt === r.recordedAt && prev.kind === r.kind
      prev = r
      if (again || tl.has(r.kind, r.recordedAt)) {
        verdicts.set(r.ref, 'duplicate')
        continue
      }
      // Newer than anything stored, or inside the window's complete part: the window knows.
      if (r.recordedAt <= this.latest[r.kind] && r.recordedAt <= this.completeAfter[r.kind])
        (ask ??= []).push(r)
      fresh.push(r)
    }
    let created = fresh
    if (ask) {
      const stored = await this.env.history.existing(
        ws,
        meter.id,
        ask.map((r) => ({ kind: r.kind, t: r.recordedAt })),
      )
      created = []
      for (const r of fresh) {
        if (stored.has(key(r.kind, r.recordedAt))) verdicts.set(r.ref, 'duplicate')
        else created.push(r)
      }
    }

    try {
      const rows: RowOut[] = []
      // Keys of this turn's new rows, built only when a neighbour's flags changed.
      let own: Map<string, RowOut> | null = null
      const changed = new Map<string, QualityFlag[]>()
      const now = chTime(this.env.now())
      // Exact flags need the reading's stored neighbours in the window; those the window
      // cannot vouch for come from the store, all in one look-up (merged across meters).
      const far = created
        .filter((r) => !this.windowKnows(tl, r.recordedAt))
        .map((r) => r.recordedAt)
      if (far.length)
        tl.load(await this.env.history.neighbourhood(ws, meter.id, far, NEIGHBOURHOOD))
      for (const r of created) {
        const c: Canonical =
          r.unit !== null && isUnit(r.unit)
            ? canonicalize(r.value, r.unit, meterUnit(meter))
            : { canonicalValue: null, canonicalUnit: null, unitMismatch: false }
        const res = tl.insert({
          kind: r.kind,
          recordedAt: r.recordedAt,
          canonicalValue: c.canonicalValue,
          unitMismatch: c.unitMismatch,
        })
        if (res.duplicate) {
          verdicts.set(r.ref, 'duplicate')
          continue
        }
        rows.push({
          kind: r.kind,
          recordedAt: chTime(r.recordedAt),
          value: r.value,
          unit: r.unit,
          canonicalValue: c.canonicalValue,
          canonicalUnit: c.canonicalUnit,
          flags: res.flags,
          rawJson: r.rawPayload,
          ingestedAt: now,
          version: this.env.store.version(),
        })
        for (const ch of res.changed) changed.set(key(ch.kind, ch.recordedAt), ch.flags)
        verdicts.set(r.ref, 'created')
      }

      // Neighbours whose flags changed: new rows of this turn are amended in place, stored
      // ones are written again as a new version (ReplacingMergeTree keeps the newest).
      const restate: { kind: string; t: number }[] = []
      if (changed.size) {
        own = new Map()
        for (const row of rows)
          own.set(`${row.kind}:${Date.parse(row.recordedAt.replace(' ', 'T') + 'Z')}`, row)
      }
      for (const [k, flags] of changed) {
        const mine = own!.get(k)
        if (mine) mine.flags = flags
        else {
          const [kind, t] = k.split(':')
          restate.push({ kind: kind!, t: Number(t) })
        }
      }
      const stored = restate.length ? await this.env.history.rows(ws, meter.id, restate) : []
      for (const old of stored) {
        const flags = changed.get(
          key(old.kind, Date.parse(old.recorded_at.replace(' ', 'T') + 'Z')),
        )
        if (!flags) continue
        rows.push({
          kind: old.kind,
          recordedAt: old.recorded_at,
          value: Number(old.value),
          unit: old.unit,
          canonicalValue: old.canonical_value === null ? null : Number(old.canonical_value),
          canonicalUnit: old.canonical_unit,
          flags,
          rawJson: JSON.stringify(old.raw_payload),
          ingestedAt: old.ingested_at,
          // Above the stored row's version, whichever instance's clock wrote it (HLC).
          version: this.env.store.versionAfter(old.version),
        })
      }

      // Status reports of created readings; the meter's status changes with the newest one.
      let statusRows = ''
      let statusCount = 0
      const statusVersions: number[] = []
      let newest: { statuses: string[]; reportedAt: number; rawFlags: string[] } | null = null
      for (const r of created) {
        if (!r.status || verdicts.get(r.ref) !== 'created') continue
        const version = this.env.store.version()
        statusVersions.push(version)
        statusRows +=
          JSON.stringify({
            workspace_id: ws,
            meter_id: meter.id,
            reported_at: chTime(r.recordedAt),
            raw_flags: r.status.rawFlags,
            statuses: r.status.statuses,
            version,
          }) + '\n'
        statusCount++
        if (!newest || r.recordedAt >= newest.reportedAt)
          newest = {
            statuses: r.status.statuses,
            reportedAt: r.recordedAt,
            rawFlags: r.status.rawFlags,
          }
      }

      let body = ''
      for (const row of rows) body += rowLine(ws, meter.id, row)
      // No multi-table transaction in ClickHouse: status reports go first, and are taken
      // back (by their exact versions) if the readings cannot be stored, so a failed turn
      // leaves nothing behind and its retry stores both.
      if (statusCount) await this.env.store.statusReports.write(statusRows, statusCount)
      try {
        await this.env.store.readings.write(body, rows.length)
      } catch (err) {
        if (statusCount)
          await deleteStatusVersions(this.env.store.sql, ws, meter.id, statusVersions).catch(
            () => {},
          )
        throw err
      }

      for (const r of created)
        if (verdicts.get(r.ref) === 'created' && r.recordedAt > this.latest[r.kind])
          this.latest[r.kind] = r.recordedAt
      const w = this.env.window
      const dropped = tl.retain(w?.spanMs ?? WINDOW_SPAN_MS, w?.maxPerKind ?? WINDOW_MAX)
      for (const k of KINDS)
        if (dropped[k] > this.completeAfter[k]) this.completeAfter[k] = dropped[k]

      if (newest && (!this.status || newest.reportedAt > this.status.reportedAt)) {
        const before = this.status
        this.status = { statuses: newest.statuses, reportedAt: newest.reportedAt }
        if (!before || !sameSet(before.statuses, newest.statuses))
          await this.env.outbox.emit(ws, 'meter.status_changed', {
            meter: { id: meter.id, identifier: meter.meter_identifier },
            statuses: newest.statuses,
            previous_statuses: before?.statuses ?? null,
            raw_flags: newest.rawFlags,
            reported_at: new Date(newest.reportedAt).toISOString(),
          })
      }
      return verdicts
    } catch (err) {
      // Nothing of this turn may count as stored: reload from the store next time.
      this.timeline = null
      throw err
    }
  }
}

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false
  const s = new Set(a)
  return b.every((x) => s.has(x))
}
