// In-process coordination: correct for exactly one instance (the embedded default).
import { EventEmitter } from 'node:events'
import v8 from 'node:v8'
import { publishTake } from './channel.js'
import { windowStart, type Coord, type TakeResult } from './coord.js'

interface Entry {
  value: string
  expiresAt: number
}

/** A claimed key on the heap: its text, value, entry and slot (~294 bytes measured, gateway-repeat keys). */
const BYTES_PER_CLAIM = 300

/** Claimed keys kept per ttl: a tenth of V8's heap limit (~1,430,000 on a 4 GiB heap). */
export const claimBound = (heapLimit: number) =>
  Math.max(10_000, Math.floor((heapLimit * 0.1) / BYTES_PER_CLAIM))

export class MemoryCoord implements Coord {
  readonly kind = 'memory' as const
  private readonly values = new Map<string, Entry>()
  /**
   * `claimValues`' keys, per ttl. A Map iterates in insertion order, which for one ttl is
   * expiry order: expired keys leave from the front, a few per call. (The gateway-repeat check
   * claims a key per telegram; in `values`, the periodic sweep over every key cost more than
   * the check.) At most `maxClaimed` per ttl: past it the oldest go first.
   */
  private readonly claimed = new Map<number, Map<string, Entry>>()
  private readonly sequences = new Map<string, number>()
  private readonly bus = new EventEmitter()
  private sweeps = 0

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxClaimed = claimBound(v8.getHeapStatistics().heap_size_limit),
  ) {
    this.bus.setMaxListeners(0)
  }

  private live(key: string): Entry | undefined {
    const e = this.values.get(key)
    if (e && e.expiresAt <= this.now()) {
      this.values.delete(key)
      return undefined
    }
    return e
  }

  private sweep(): void {
    // Expired keys are dropped lazily; a full sweep now and then keeps memory bounded.
    if (++this.sweeps % 10_000 !== 0) return
    const now = this.now()
    for (const [k, e] of this.values) if (e.expiresAt <= now) this.values.delete(k)
  }

  async take(key: string, limit: number, windowMs: number, by = 1): Promise<TakeResult> {
    const r = this.takeNow(key, limit, windowMs, by)
    publishTake({ coord: this, key, by, ok: r.ok })
    return r
  }

  private takeNow(key: string, limit: number, windowMs: number, by: number): TakeResult {
    this.sweep()
    const now = this.now()
    const start = windowStart(now, windowMs)
    const k = `${key}:${start}`
    const e = this.live(k)
    const count = e ? Number(e.value) : 0
    const resetMs = start + windowMs - now
    if (count + by > limit) return { ok: false, count, resetMs }
    this.values.set(k, { value: String(count + by), expiresAt: start + windowMs })
    return { ok: true, count: count + by, resetMs }
  }

  async giveBack(key: string, by: number): Promise<void> {
    for (const [k, e] of this.values)
      if (k.startsWith(key + ':')) e.value = String(Math.max(0, Number(e.value) - by))
  }

  async nextId(sequence: string, floor: () => Promise<number>): Promise<number> {
    const current = this.sequences.get(sequence) ?? (await floor())
    const next = Math.max(this.sequences.get(sequence) ?? 0, current) + 1
    this.sequences.set(sequence, next)
    return next
  }

  async hlc(name: string, candidate: number): Promise<number> {
    const next = Math.max((this.sequences.get(`hlc:${name}`) ?? 0) + 1, candidate)
    this.sequences.set(`hlc:${name}`, next)
    return next
  }

  async nextIds(sequence: string, count: number, floor: () => Promise<number>): Promise<number> {
    const current = this.sequences.get(sequence) ?? (await floor())
    const first = Math.max(this.sequences.get(sequence) ?? 0, current) + 1
    this.sequences.set(sequence, first + count - 1)
    return first
  }

  async lease(name: string, owner: string, ttlMs: number): Promise<boolean> {
    const e = this.live(`lease:${name}`)
    if (e && e.value !== owner) return false
    this.values.set(`lease:${name}`, { value: owner, expiresAt: this.now() + ttlMs })
    return true
  }

  async release(name: string, owner: string): Promise<void> {
    if (this.live(`lease:${name}`)?.value === owner) this.values.delete(`lease:${name}`)
  }

  async leaseMany(
    names: string[],
    values: string[],
    owner: string,
    ttlMs: number,
  ): Promise<(string | null)[]> {
    const out: (string | null)[] = []
    for (let i = 0; i < names.length; i++)
      out.push(
        (await this.lease(names[i]!, owner, ttlMs)) ? (this.live(values[i]!)?.value ?? '') : null,
      )
    return out
  }

  async releaseMany(
    names: string[],
    values: string[],
    set: (string | null)[],
    owner: string,
  ): Promise<void> {
    for (let i = 0; i < names.length; i++) {
      if (this.live(`lease:${names[i]}`)?.value !== owner) continue
      if (set[i] !== null) this.values.set(values[i]!, { value: set[i]!, expiresAt: Infinity })
      this.values.delete(`lease:${names[i]}`)
    }
  }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    this.sweep()
    if (this.live(key)) return false
    this.values.set(key, { value: '1', expiresAt: this.now() + ttlMs })
    return true
  }

  async claimValues(keys: string[], values: string[], ttlMs: number): Promise<(string | null)[]> {
    const now = this.now()
    let held = this.claimed.get(ttlMs)
    if (!held) this.claimed.set(ttlMs, (held = new Map()))
    // Oldest first: the expired ones are at the front.
    for (const [k, e] of held) {
      if (e.expiresAt > now) break
      held.delete(k)
    }
    const out = new Array<string | null>(keys.length)
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!
      const e = held.get(k)
      if (e && e.expiresAt > now) out[i] = e.value
      else {
        // An expired key is set again at the back, where its new expiry belongs.
        if (e) held.delete(k)
        held.set(k, { value: values[i]!, expiresAt: now + ttlMs })
        out[i] = null
      }
    }
    for (const k of held.keys()) {
      if (held.size <= this.maxClaimed) break
      held.delete(k)
    }
    return out
  }

  async unclaim(keys: string[]): Promise<void> {
    for (const k of keys) this.values.delete(k)
  }

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null
  }

  async incr(key: string): Promise<number> {
    const next = Number(this.live(key)?.value ?? 0) + 1
    this.values.set(key, { value: String(next), expiresAt: Infinity })
    return next
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    this.values.set(key, { value, expiresAt: ttlMs ? this.now() + ttlMs : Infinity })
  }

  async publish(channel: string, message: string): Promise<void> {
    this.bus.emit(channel, message)
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<void> {
    this.bus.on(channel, handler)
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.bus.removeAllListeners()
  }
}
