// The readings of a meter's window that no quality rule sees (no canonical value, or a unit
// mismatch): kept apart from the valid ones' columns (MeterTimeline), by time.
import type { TimelineReading } from './quality/index.js'

/** One kind's invalid readings held, by time, with whether they were added in time order. */
export class InvalidReadings {
  readonly byTime = new Map<number, TimelineReading>()
  /** `byTime` holds its times in ascending (insertion) order. */
  ascending = true
  newest = -Infinity

  add(t: number, r: TimelineReading): void {
    if (this.byTime.size === 0) {
      this.ascending = true
      this.newest = t
    } else if (t < this.newest) this.ascending = false
    else this.newest = t
    this.byTime.set(t, r)
  }

  /**
   * Drops the readings older than `floor`, and the oldest beyond `max` (`retain`, `trim`).
   * Returns the newest time dropped, or null. Readings mostly arrive in order, and a Map
   * iterates in insertion order: then only what is dropped is visited. Copying and sorting
   * every time on every turn was a visible cost of meters whose readings are all invalid (up
   * to 512 held per kind: 13-16 µs per turn in a scratch loop, 2.4-3.2 without the sort). A
   * late reading puts the Map back in order once. Drops are always the oldest, so `newest`
   * stays right.
   */
  drop(floor: number, max: number): number | null {
    const inv = this.byTime
    if (!this.ascending) {
      const sorted = [...inv].sort((a, b) => a[0] - b[0])
      inv.clear()
      for (const [t, r] of sorted) inv.set(t, r)
      this.ascending = true
    }
    let left = inv.size
    let last: number | null = null
    // In ascending order both conditions hold for a prefix only.
    for (const t of inv.keys()) {
      if (!(t < floor || left > max)) break
      inv.delete(t)
      left--
      last = t
    }
    return last
  }
}
