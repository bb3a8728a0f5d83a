import type { QualityFlag } from '../../domain/quality.js'

/** No flags: one frozen array shared by every reading without any. */
export const NO_FLAGS: readonly QualityFlag[] = Object.freeze([])

/** Per reading: its time, its canonical value and the rate of the interval ending there. */
const STRIDE = 3
/** A rate not worked out yet (NaN is no rate intervalRate gives). */
const UNKNOWN = NaN
/** intervalRate's null (no rate is negative). */
const NONE = -Infinity

/**
 * The valid readings of one kind of one meter, in time order (one per time), as columns: an
 * array of unboxed doubles, (time, canonical value, rate of the interval ending there) per
 * reading, and an array of their flags, most of them the shared NO_FLAGS. A meter's window
 * held one object per reading (its time, value and rate boxed beside it, ~100 bytes); a
 * window that moves with every reading then made the GC promote, mark and sweep one per
 * reading stored. Here a reading is 32 bytes in two arrays that V8 grows in place, dropping
 * from the old end moves an offset, and an append writes into room already there (or moves
 * the readings down into the room the dropped ones left). Plain arrays, not Float64Arrays:
 * those keep their bytes outside the heap, and V8 answered their growth with more full
 * collections.
 */
export class Series {
  private d: number[] = []
  private fs: (readonly QualityFlag[])[] = []
  /**
   * Index (in readings) of reading 0 in `d` and `fs`. What lies past head + length is room
   * (`fs.length` readings in all).
   */
  private head = 0
  length = 0

  /** A series of points given in ascending time (computeFlags). */
  static of(points: readonly { t: number; v: number }[]): Series {
    const s = new Series()
    for (const p of points) s.insert(s.length, p.t, p.v, NO_FLAGS)
    return s
  }

  /** recorded_at (epoch ms) of reading i. */
  t(i: number): number {
    return this.d[(this.head + i) * STRIDE]!
  }

  /** Canonical value of reading i. */
  v(i: number): number {
    return this.d[(this.head + i) * STRIDE + 1]!
  }

  /** Time of the newest reading; -Infinity when there is none. */
  lastT(): number {
    return this.length ? this.d[(this.head + this.length - 1) * STRIDE]! : -Infinity
  }

  flags(i: number): readonly QualityFlag[] {
    return this.fs[this.head + i]!
  }

  setFlags(i: number, flags: readonly QualityFlag[]): void {
    this.fs[this.head + i] = flags
  }

  /** The rate of the interval ending at i as last kept (`keepRate`); undefined when not known. */
  knownRate(i: number): number | null | undefined {
    const r = this.d[(this.head + i) * STRIDE + 2]!
    if (r !== r) return undefined
    return r === NONE ? null : r
  }

  keepRate(i: number, rate: number | null): void {
    this.d[(this.head + i) * STRIDE + 2] = rate === null ? NONE : rate
  }

  /** First index whose time is >= t. */
  lowerBound(t: number): number {
    return this.search(t, false)
  }

  /** First index whose time is > t. */
  upperBound(t: number): number {
    return this.search(t, true)
  }

  /** Binary search: the first index whose time is past t (or at it, unless `after`). */
  private search(t: number, after: boolean): number {
    const d = this.d
    const base = this.head
    let lo = 0
    let hi = this.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const x = d[(base + mid) * STRIDE]!
      if (x < t || (after && x === t)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Index of the reading at exactly t, or -1. */
  indexOf(t: number): number {
    const i = this.lowerBound(t)
    return i < this.length && this.t(i) === t ? i : -1
  }

  /**
   * Puts a reading at index i (the caller keeps the times in order). Its rate, and that of
   * the reading after it (whose interval now starts here), are to be worked out again.
   */
  insert(i: number, t: number, v: number, flags: readonly QualityFlag[]): void {
    if (this.fs.length === 0) {
      // Arrays of exactly one reading: the first push would reserve room for 17 (most meters
      // report one kind, and many a reading or two between restarts).
      this.d = [t, v, UNKNOWN]
      this.fs = [flags]
      this.length = 1
      return
    }
    // Room for one more at the end: readings dropped from the front left some there (moved
    // down unless that would come round again soon), else V8 grows the store by half.
    if (this.head + this.length === this.fs.length) {
      if (this.head > 0 && this.length < (this.fs.length * 3) >> 2) this.moveDown()
      else {
        this.d.push(0, 0, 0)
        this.fs.push(NO_FLAGS)
      }
    }
    const d = this.d
    const fs = this.fs
    const k = this.head + i
    const end = this.head + this.length
    if (k < end) {
      // By hand: Array#copyWithin reads and writes element by element through the generic path.
      for (let j = end * STRIDE - 1; j >= k * STRIDE; j--) d[j + STRIDE] = d[j]!
      for (let j = end; j > k; j--) fs[j] = fs[j - 1]!
      d[(k + 1) * STRIDE + 2] = UNKNOWN
    }
    d[k * STRIDE] = t
    d[k * STRIDE + 1] = v
    d[k * STRIDE + 2] = UNKNOWN
    fs[k] = flags
    this.length++
  }

  /** Drops the n oldest readings. */
  dropFirst(n: number): void {
    if (n <= 0) return
    const fs = this.fs
    // Their flags are let go (a flagged reading's array is its own).
    for (let j = this.head; j < this.head + n; j++) fs[j] = NO_FLAGS
    this.length -= n
    this.head = this.length ? this.head + n : 0
  }

  /** Moves the readings to the front of the same arrays (shortened, V8 would give their store back). */
  private moveDown(): void {
    const d = this.d
    const fs = this.fs
    const head = this.head
    const len = this.length
    for (let j = 0; j < len * STRIDE; j++) d[j] = d[head * STRIDE + j]!
    for (let j = 0; j < len; j++) fs[j] = fs[head + j]!
    for (let j = len; j < head + len; j++) fs[j] = NO_FLAGS
    this.head = 0
  }
}
