// Which neighbours a reading inserted out of order can change (MeterTimeline.insert).
import type { Families, Kind, Series } from './quality/index.js'

/**
 * The neighbours a late reading can change (kind and index in its valid readings), each
 * with the families of its flags to recompute: parallel arrays of numbers and kinds, reused
 * by every insert (inserts never overlap), so they hold no entry of any window.
 */
export class Hits {
  kinds: Kind[] = []
  at: number[] = []
  fams: Families[] = []
  size = 0

  clear(): void {
    this.size = 0
  }

  add(kind: Kind, at: number, fams: Families): void {
    this.kinds[this.size] = kind
    this.at[this.size] = at
    this.fams[this.size++] = fams
  }

  /** Adds `fams` to the hit of (kind, at), or lists it; nothing when `at` is past `arr`. */
  mark(kind: Kind, arr: Series, at: number, fams: Families): void {
    if (at >= arr.length) return
    for (let h = 0; h < this.size; h++)
      if (this.at[h] === at && this.kinds[h] === kind) {
        this.fams[h]! |= fams
        return
      }
    this.add(kind, at, fams)
  }
}

/** The one instance every insert uses (inserts never overlap). */
export const HITS = new Hits()
