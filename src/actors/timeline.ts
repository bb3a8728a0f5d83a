import {
  ALL_FAMILIES,
  KINDS,
  FAMILY,
  FLAGS_OF,
  familyFlags,
  isValid,
  NEIGHBOURHOOD,
  NO_FLAGS,
  RATE_WINDOW,
  sameFlags,
  Series,
  sortFlags,
  unitFlags,
  type Kind,
  type MeterQualityContext,
  type QualityFlag,
  type QualityView,
  type TimelineReading,
} from './quality/index.js'
import { HITS } from './insert-hits.js'
import { InvalidReadings } from './invalid-readings.js'

export { computeFlags } from './quality/index.js'
export type { Kind, MeterQualityContext, QualityFlag, TimelineReading } from './quality/index.js'

const other = (k: Kind): Kind => (k === 'saldo' ? 'consumption' : 'saldo')

function copy(r: TimelineReading): TimelineReading {
  return { ...r, flags: [...r.flags] }
}

/** What `retain` answers when it dropped nothing (most turns): one shared object. */
export const NOTHING_DROPPED: Readonly<Record<Kind, number>> = Object.freeze({
  consumption: -Infinity,
  saldo: -Infinity,
})
const held = (flags: readonly QualityFlag[]) => (flags.length ? flags : NO_FLAGS)
/** An insert that changed no other reading's flags (nearly every one): one shared answer. */
const NO_CHANGES: readonly TimelineReading[] = Object.freeze([])

/**
 * Valid reading i of `kind` as a reading (a copy). A valid reading held in the window has a
 * canonical value and no unit mismatch, so its series keeps only its time, value, flags
 * (sorted; NO_FLAGS when none, shared and never changed: a new array replaces it) and rate.
 */
function reading(kind: Kind, s: Series, i: number): TimelineReading {
  return {
    kind,
    recordedAt: s.t(i),
    canonicalValue: s.v(i),
    unitMismatch: false,
    flags: [...s.flags(i)],
  }
}

/**
 * In-memory, ordered per-meter window of readings (both kinds) used by the meter actor.
 *
 * Contract with the actor (see docs/quality.md, "Incremental evaluation"):
 * - Readings loaded via the constructor or `load()` keep their stored flags (no recomputation).
 * - Before inserting a reading at t that is not a pure append for its kind (t <= latest(kind)),
 *   or when the window may not hold `before` readings of each kind before t, the actor loads
 *   `neighbourhood(kind, t)` from the store: per kind, the `before` latest valid readings with
 *   recorded_at < t and the `after` earliest valid readings with recorded_at >= t, then
 *   calls `load()`. Valid = canonical value present and no unit mismatch.
 * - `insert()` recomputes exactly the flag families that can depend on the new reading, so
 *   readings outside the loaded neighbourhood are never touched.
 */
export class MeterTimeline {
  private readonly ctx: MeterQualityContext
  private readonly valid: Record<Kind, Series> = { consumption: new Series(), saldo: new Series() }
  /**
   * Per kind, the invalid readings held, made with the first one: most meters never send
   * one, and every turn asked both kinds' Maps whether they held any. Those were a Map and
   * its table per kind to read, a first touch of memory no other part of the turn brought
   * near: the lines of `insert` and `retain` asking them were ~8 % of the gateway's main
   * thread samples (service profile).
   */
  private invalidC: InvalidReadings | null = null
  private invalidS: InvalidReadings | null = null

  constructor(ctx: MeterQualityContext, initial?: TimelineReading[]) {
    this.ctx = { ...ctx, exchanges: [...ctx.exchanges] }
    if (initial) this.load(initial)
  }

  /** Add already-stored readings with their stored flags (no recomputation). Existing (kind, recordedAt) are ignored. */
  load(readings: TimelineReading[]): void {
    for (const r of readings) {
      if (this.has(r.kind, r.recordedAt)) continue
      if (!isValid(r)) {
        this.addInvalid(r.kind, r.recordedAt, copy(r))
        continue
      }
      const arr = this.valid[r.kind]
      const flags = r.flags.length ? [...r.flags] : NO_FLAGS
      arr.insert(arr.lowerBound(r.recordedAt), r.recordedAt, r.canonicalValue as number, flags)
    }
  }

  /**
   * A stored reading another instance wrote or re-versioned (MeterActor.catchUp): added, or
   * where held, its stored flags replace the held ones (a reading's validity never changes
   * between versions: only its neighbour flags are re-versioned).
   */
  refresh(r: TimelineReading): void {
    if (!isValid(r)) {
      const held = this.invalid(r.kind)?.byTime.get(r.recordedAt)
      if (held) held.flags = [...r.flags]
      else this.addInvalid(r.kind, r.recordedAt, copy(r))
      return
    }
    const arr = this.valid[r.kind]
    const i = arr.indexOf(r.recordedAt)
    const flags = r.flags.length ? [...r.flags] : NO_FLAGS
    if (i >= 0) arr.setFlags(i, flags)
    else arr.insert(arr.lowerBound(r.recordedAt), r.recordedAt, r.canonicalValue as number, flags)
  }

  private invalid(kind: Kind): InvalidReadings | null {
    return kind === 'saldo' ? this.invalidS : this.invalidC
  }

  has(kind: Kind, t: number): boolean {
    const inv = this.invalid(kind)
    // Past the newest invalid one (a meter without canonical values, reporting in order):
    // no look-up in the Map.
    if (inv !== null && t <= inv.newest && inv.byTime.has(t)) return true
    const arr = this.valid[kind]
    // Past the newest (a reading in order): no search.
    if (t > arr.lastT()) return false
    return arr.indexOf(t) >= 0
  }

  /** The reading stored in the window at (kind, t), as a copy. */
  get(kind: Kind, t: number): TimelineReading | undefined {
    const inv = this.invalid(kind)?.byTime.get(t)
    if (inv) return copy(inv)
    const arr = this.valid[kind]
    const i = arr.indexOf(t)
    return i >= 0 ? reading(kind, arr, i) : undefined
  }

  /** All readings in the window, ordered by recordedAt (consumption before saldo at equal times), as copies. */
  readings(): TimelineReading[] {
    const all: TimelineReading[] = []
    for (const kind of KINDS) {
      const arr = this.valid[kind]
      for (let i = 0; i < arr.length; i++) all.push(reading(kind, arr, i))
      for (const r of this.invalid(kind)?.byTime.values() ?? []) all.push(copy(r))
    }
    return all.sort(
      (a, b) => a.recordedAt - b.recordedAt || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0),
    )
  }

  get size(): number {
    return KINDS.reduce((n, k) => n + this.valid[k].length + (this.invalid(k)?.byTime.size ?? 0), 0)
  }

  earliest(): number | null {
    let best: number | null = null
    for (const kind of KINDS) {
      const arr = this.valid[kind]
      if (arr.length && (best === null || arr.t(0) < best)) best = arr.t(0)
      for (const t of this.invalid(kind)?.byTime.keys() ?? [])
        if (best === null || t < best) best = t
    }
    return best
  }

  latest(kind: Kind): number | null {
    const arr = this.valid[kind]
    let best: number | null = arr.length ? arr.lastT() : null
    for (const t of this.invalid(kind)?.byTime.keys() ?? []) if (best === null || t > best) best = t
    return best
  }

  /**
   * True when inserting (kind, t) needs nothing beyond a window that holds the latest
   * readings of the store (a per-kind suffix of at least `neighbourhood().before` readings):
   * t is later than every valid reading of its kind and not earlier than every valid reading
   * of the other kind. Otherwise the actor loads `neighbourhood(kind, t)` first.
   */
  isAppend(kind: Kind, t: number): boolean {
    for (const k of KINDS) {
      const arr = this.valid[k]
      if (!arr.length) continue
      const last = arr.lastT()
      if (k === kind ? t <= last : t < last) return false
    }
    return true
  }

  /**
   * Neighbours needed for an exact insert at t: `before` valid readings of EACH kind with
   * recorded_at < t and `after` valid readings of EACH kind with recorded_at >= t.
   * Constant today (independent of kind and t).
   */
  neighbourhood(_kind: Kind, _t: number): { before: number; after: number } {
    return { before: NEIGHBOURHOOD, after: NEIGHBOURHOOD }
  }

  /**
   * Keep only the latest max(keep, NEIGHBOURHOOD) valid readings of each kind (and invalid
   * readings no older than the oldest kept valid reading of their kind, at most that many).
   */
  trim(keep: number): void {
    const k = Math.max(Math.floor(keep) || 0, NEIGHBOURHOOD)
    for (const kind of KINDS) {
      const arr = this.valid[kind]
      if (arr.length > k) arr.dropFirst(arr.length - k)
      this.invalid(kind)?.drop(arr.length ? arr.t(0) : Number.NEGATIVE_INFINITY, k)
    }
  }

  /** Valid readings of `kind` in the window. */
  validCount(kind: Kind): number {
    return this.valid[kind].length
  }

  /** Valid readings of `kind` in the window with from <= recorded_at < to. */
  validBetween(kind: Kind, from: number, to: number): number {
    const arr = this.valid[kind]
    return Math.max(0, arr.lowerBound(to) - arr.lowerBound(from))
  }

  /**
   * Keeps, per kind, the valid readings within `spanMs` of that kind's newest valid one and
   * NEIGHBOURHOOD before those (at least NEIGHBOURHOOD, at most `maxPerKind`), and the
   * invalid readings no older than the oldest kept valid one (at most `maxPerKind`).
   * Drops only from the old end, and
   * returns per kind the newest recorded_at dropped (-Infinity when nothing was): the window
   * still holds everything it held after that time.
   */
  retain(spanMs: number, maxPerKind: number): Readonly<Record<Kind, number>> {
    const max = Math.max(maxPerKind, NEIGHBOURHOOD)
    // Made when something is dropped: a turn that drops nothing (most) allocates nothing.
    let dropped: Record<Kind, number> | null = null
    for (const kind of KINDS) {
      const arr = this.valid[kind]
      let cut = 0
      if (arr.length > NEIGHBOURHOOD) {
        const since = arr.lastT() - spanMs
        // NEIGHBOURHOOD more before the span: a late reading anywhere in the span then
        // finds the readings its flags depend on in the window. Nothing before the span
        // beyond those (arr[NEIGHBOURHOOD] inside it): no search.
        if (arr.t(NEIGHBOURHOOD) < since)
          cut = Math.min(arr.lowerBound(since) - NEIGHBOURHOOD, arr.length - NEIGHBOURHOOD)
        cut = Math.max(cut, arr.length - max)
      }
      if (cut > 0) {
        ;(dropped ??= { consumption: -Infinity, saldo: -Infinity })[kind] = arr.t(cut - 1)
        arr.dropFirst(cut)
      }
      const inv = this.invalid(kind)
      if (inv === null || !inv.byTime.size) continue
      // Without a valid reading kept, the span counts back from the newest invalid one.
      const floor = arr.length ? arr.t(0) : inv.newest - spanMs
      const last = inv.drop(floor, max)
      if (last !== null) {
        dropped ??= { consumption: -Infinity, saldo: -Infinity }
        dropped[kind] = Math.max(dropped[kind], last)
      }
    }
    return dropped ?? NOTHING_DROPPED
  }

  private addInvalid(kind: Kind, t: number, r: TimelineReading): void {
    let inv = this.invalid(kind)
    if (inv === null) {
      inv = new InvalidReadings()
      if (kind === 'saldo') this.invalidS = inv
      else this.invalidC = inv
    }
    inv.add(t, r)
  }

  insert(
    input: Omit<TimelineReading, 'flags'>,
  ):
    | { duplicate: true }
    | { duplicate: false; flags: readonly QualityFlag[]; changed: readonly TimelineReading[] } {
    const { kind, recordedAt: t } = input
    if (this.has(kind, t)) return { duplicate: true }
    if (!isValid(input)) {
      // Invisible to every other rule: nothing else can change.
      const r: TimelineReading = { ...input, flags: sortFlags(unitFlags(input)) }
      this.addInvalid(kind, t, r)
      return { duplicate: false, flags: held(r.flags), changed: NO_CHANGES }
    }

    const view: QualityView = this.valid
    const arr = this.valid[kind]
    const i = arr.lowerBound(t)
    arr.insert(i, t, input.canonicalValue as number, NO_FLAGS)
    const own = familyFlags(view, kind, i, this.ctx, ALL_FAMILIES)
    const flags = own.length ? sortFlags(own) : NO_FLAGS
    arr.setFlags(i, flags)
    // Later than every valid reading of both kinds (a meter reporting in order): no reading
    // follows it, so no rule of another reading can look back at it. The common case skips
    // the search below.
    if (i === arr.length - 1 && this.valid[other(kind)].lastT() < t)
      return { duplicate: false, flags, changed: NO_CHANGES }

    // Which families of which other readings can depend on the new reading: at most
    // RATE_WINDOW + 5 of them, listed with a mask each (a Map with a Set per neighbour was
    // the largest allocation of a turn with late readings).
    const hits = HITS
    hits.clear()
    // Rate: the next RATE_WINDOW + 1 readings of the same kind (their interval or baseline window).
    for (let j = i + 1; j <= i + RATE_WINDOW + 1 && j < arr.length; j++)
      hits.add(kind, j, FAMILY.rate)
    const saldo = this.valid.saldo
    if (kind === 'saldo') {
      // The next saldo's step and mismatch pair now start at t.
      hits.mark('saldo', saldo, i + 1, FAMILY.step | FAMILY.mismatch)
    } else {
      // Saldo pairs (a, b] with a < t <= b, and the pair starting at a saldo at t.
      hits.mark('saldo', saldo, saldo.lowerBound(t), FAMILY.mismatch)
      hits.mark('saldo', saldo, saldo.upperBound(t), FAMILY.mismatch)
    }
    // meter_exchange: the next valid readings (any kind) after t now have t as predecessor.
    let next: number | null = null
    for (const k of KINDS) {
      const a = this.valid[k]
      const j = a.upperBound(t)
      if (j < a.length && (next === null || a.t(j) < next)) next = a.t(j)
    }
    if (next !== null) {
      for (const k of KINDS) {
        const a = this.valid[k]
        const j = a.indexOf(next)
        if (j >= 0) hits.mark(k, a, j, FAMILY.exchange)
      }
    }

    let changed: TimelineReading[] | null = null
    for (let h = 0; h < hits.size; h++) {
      const ek = hits.kinds[h]!
      const at = hits.at[h]!
      const s = this.valid[ek]
      const fams = hits.fams[h]!
      const fresh = familyFlags(view, ek, at, this.ctx, fams)
      const before = s.flags(at)
      // No flags before and none now (nearly every neighbour): nothing to merge or compare.
      if (!fresh.length && !before.length) continue
      const drop = FLAGS_OF[fams]!
      const nf = sortFlags([...before.filter((f) => !drop.has(f)), ...fresh])
      if (!sameFlags(nf, before)) {
        s.setFlags(at, held(nf))
        ;(changed ??= []).push(reading(ek, s, at))
      }
    }
    changed?.sort((a, b) => a.recordedAt - b.recordedAt || (a.kind < b.kind ? -1 : 1))
    return { duplicate: false, flags, changed: changed ?? NO_CHANGES }
  }
}
