// The in-process coordinator's claimed keys (`claimValues`, one ttl per table): typed arrays
// and no JavaScript object per key. The gateway-repeat check claims a key per telegram and
// keeps it 10 minutes, millions of keys at gateway rates; kept as strings in a Map, with an
// entry object each, they took 300 bytes a key and every major GC went over all of them
// (the telegram gateway bench: 5.4-5.7 CPU ms per 1,000 telegrams for the check, half of it
// in V8's helper threads). Here a key is 28 bytes: three 32-bit hashes of its text (96 bits:
// two keys taken for one would need all three equal), its value and its expiry.
//
// Entries sit in a ring in insertion order, which for one ttl is expiry order: expired ones
// leave from the front. An open-addressing index (linear probing, deletion by backward
// shift, so no tombstones) finds a key's ring position. The ring doubles up to `max`
// entries; past that the oldest make room.

/** Bytes a kept key takes: its ring entry (28) and two index slots (8). */
export const BYTES_PER_CLAIM = 36

/** Three 32-bit hashes of a string (FNV-1a-like mixes with different multipliers). */
function hashes(key: string, out: Int32Array): void {
  let a = 0x811c9dc5
  let b = 0x9e3779b9
  let c = key.length
  for (let i = 0; i < key.length; i++) {
    const ch = key.charCodeAt(i)
    a = Math.imul(a ^ ch, 0x01000193)
    b = Math.imul(b ^ ch, 0x85ebca6b)
    c = Math.imul(c + ch, 0xc2b2ae35) ^ (c >>> 13)
  }
  // Finalised so that nearby keys spread over the index's low bits.
  a = Math.imul(a ^ (a >>> 16), 0x7feb352d)
  out[0] = a ^ (a >>> 15)
  out[1] = b ^ (b >>> 16)
  out[2] = c
}

const MIN_CAPACITY = 1024

/** The index for a ring of `cap`: the power of two at or above twice it. */
const indexSize = (cap: number) => 2 ** Math.ceil(Math.log2(2 * cap))

export class ClaimTable {
  // Set by `allocate`.
  private cap!: number
  private h1!: Int32Array
  private h2!: Int32Array
  private h3!: Int32Array
  private value!: Float64Array
  private expires!: Float64Array
  /** Ring position + 1 per slot, 0 = empty; a power of two, twice the ring or more. */
  private index!: Int32Array
  private head = 0
  private count = 0
  private readonly h = new Int32Array(3)

  /** `max`: the most keys kept. */
  constructor(private readonly max: number) {
    this.allocate(Math.min(MIN_CAPACITY, max))
  }

  private allocate(cap: number): void {
    this.cap = cap
    this.h1 = new Int32Array(cap)
    this.h2 = new Int32Array(cap)
    this.h3 = new Int32Array(cap)
    this.value = new Float64Array(cap)
    this.expires = new Float64Array(cap)
    this.index = new Int32Array(indexSize(cap))
  }

  get size(): number {
    return this.count
  }

  /** Drops the keys expired at `now` (from the front: the oldest). */
  expire(now: number): void {
    while (this.count > 0 && this.expires[this.head]! <= now) this.dropHead()
  }

  /**
   * Sets `key` to `value` until now + ttl unless it holds a live value; null where it was
   * set, else the value held.
   */
  claim(key: string, value: number, now: number, ttl: number): number | null {
    hashes(key, this.h)
    const p = this.find()
    if (p >= 0) {
      if (this.expires[p]! > now) return this.value[p]!
      // Expired but not yet at the front (the clock went back): set again where it is.
      this.value[p] = value
      this.expires[p] = now + ttl
      return null
    }
    if (this.count === this.cap) {
      if (this.cap < this.max) this.grow()
      else this.dropHead()
    }
    const at = (this.head + this.count) % this.cap
    this.h1[at] = this.h[0]!
    this.h2[at] = this.h[1]!
    this.h3[at] = this.h[2]!
    this.value[at] = value
    this.expires[at] = now + ttl
    this.count++
    this.place(at)
    return null
  }

  /**
   * Drops `key` where it holds `value` live: it stays in the ring as expired (found, a later
   * claim sets it again where it is; the front drops it in its turn).
   */
  release(key: string, value: number, now: number): void {
    hashes(key, this.h)
    const p = this.find()
    if (p >= 0 && this.expires[p]! > now && this.value[p] === value) this.expires[p] = now
  }

  /** The ring position of the key hashed into `h`, or -1. */
  private find(): number {
    const a = this.h[0]!
    const b = this.h[1]!
    const c = this.h[2]!
    const mask = this.index.length - 1
    for (let s = a & mask; ; s = (s + 1) & mask) {
      const e = this.index[s]!
      if (e === 0) return -1
      const p = e - 1
      if (this.h1[p] === a && this.h2[p] === b && this.h3[p] === c) return p
    }
  }

  /** Enters ring position p into the index. */
  private place(p: number): void {
    const mask = this.index.length - 1
    let s = this.h1[p]! & mask
    while (this.index[s] !== 0) s = (s + 1) & mask
    this.index[s] = p + 1
  }

  private dropHead(): void {
    const p = this.head
    const mask = this.index.length - 1
    let i = this.h1[p]! & mask
    while (this.index[i] !== p + 1) i = (i + 1) & mask
    // Backward shift: later entries of the probe run move up where their home allows.
    for (let j = (i + 1) & mask; this.index[j] !== 0; j = (j + 1) & mask) {
      const home = this.h1[this.index[j]! - 1]! & mask
      const stays = i <= j ? i < home && home <= j : i < home || home <= j
      if (stays) continue
      this.index[i] = this.index[j]!
      i = j
    }
    this.index[i] = 0
    this.head = (this.head + 1) % this.cap
    this.count--
  }

  /** Twice the room (at most `max`): the ring is copied in order to the new arrays' start. */
  private grow(): void {
    const old = {
      h1: this.h1,
      h2: this.h2,
      h3: this.h3,
      value: this.value,
      expires: this.expires,
    }
    const oldCap = this.cap
    this.allocate(Math.min(2 * this.cap, this.max))
    for (let k = 0; k < this.count; k++) {
      const from = (this.head + k) % oldCap
      this.h1[k] = old.h1[from]!
      this.h2[k] = old.h2[from]!
      this.h3[k] = old.h3[from]!
      this.value[k] = old.value[from]!
      this.expires[k] = old.expires[from]!
      this.place(k)
    }
    this.head = 0
  }
}
