// In-process coordination: correct for exactly one instance (the embedded default).
import { randomUUID } from 'node:crypto'
import { EventEmitter } from 'node:events'
import v8 from 'node:v8'
import { BYTES_PER_CLAIM, ClaimTable } from './claim-table.js'
import { publishTake } from './channel.js'
import {
  HEARTBEAT_LEASE_TTL_MS,
  HEARTBEAT_MARK,
  NOTE_TTL_MS,
  parseClock,
  windowStart,
  type Coord,
  type LeaseBatch,
  type LeaseSpace,
  type TakeResult,
} from './coord.js'

interface Entry {
  value: string
  expiresAt: number
}

/**
 * Claimed keys kept per ttl: a twentieth of V8's heap limit at 36 bytes a key (~6 M on a
 * 4 GiB heap, ~200 MiB outside the heap): the repeat check's 10 minutes of telegrams at
 * 10,000 a second.
 */
export const claimBound = (heapLimit: number) =>
  Math.max(10_000, Math.floor((heapLimit * 0.05) / BYTES_PER_CLAIM))

/** Whether `owner`'s leases in `space` live by its heartbeat (LeaseSpace.alive). */
const onHeartbeat = (space: LeaseSpace, owner: string): space is LeaseSpace & { alive: string } =>
  space.alive !== undefined && owner.startsWith(HEARTBEAT_MARK)

export class MemoryCoord implements Coord {
  readonly kind = 'memory' as const
  private readonly values = new Map<string, Entry>()
  /** `claimValues`' keys, a table per ttl (claim-table.ts), at most `maxClaimed` each. */
  private readonly claimed = new Map<number, ClaimTable>()
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
    space: LeaseSpace,
    ids: readonly number[],
    owner: string,
    ttlMs: number,
  ): Promise<LeaseBatch> {
    const values: (string | null)[] = []
    const notes = space.note ? new Array<string | null>(ids.length).fill(null) : null
    const wanted = new Map<string, number[]>()
    // An owner on a heartbeat: its call sets it; its leases live long.
    const beats = onHeartbeat(space, owner)
    if (beats) await this.heartbeat(space, owner, ttlMs)
    const keyTtl = beats ? HEARTBEAT_LEASE_TTL_MS : ttlMs
    for (const id of ids) {
      const want = `want:${space.lease}${id}`
      const w = this.live(want)?.value
      let holder = this.live(`lease:${space.lease}${id}`)?.value
      // A heartbeat owner's lease whose heartbeat lapsed is free.
      if (holder !== undefined && holder !== owner && this.lapsed(space, holder)) {
        this.values.delete(`lease:${space.lease}${id}`)
        holder = undefined
      }
      const mine = holder === owner
      // A free lease goes to the owner refused first.
      const waitedFor = !mine && w !== undefined && w !== owner
      if (waitedFor || !(await this.lease(space.lease + id, owner, keyTtl))) {
        if (w === undefined) this.values.set(want, { value: owner, expiresAt: this.now() + 1000 })
        // Refused with a holder: another owner's (a lease of ours is renewed, not refused).
        if (space.want && holder !== undefined) {
          const list = wanted.get(holder)
          if (list) list.push(id)
          else wanted.set(holder, [id])
        }
        values.push(null)
        continue
      }
      values.push(this.live(space.value + id)?.value ?? '')
      if (mine) continue
      if (notes) notes[values.length - 1] = this.live(`${space.note}${id}`)?.value ?? null
      this.values.delete(want)
      this.values.set(space.value + id, { value: 'x', expiresAt: Infinity })
    }
    for (const [holder, list] of wanted) this.bus.emit(space.want + holder, list.join(','))
    const withNotes = notes ? { notes } : {}
    if (!space.clock || ids.length === 0) return { values, clock: null, ...withNotes }
    let c = this.live(space.clock)?.value
    if (c === undefined)
      this.values.set(space.clock, { value: (c = `${randomUUID()}:0`), expiresAt: Infinity })
    return { values, clock: parseClock(c), ...withNotes }
  }

  async heartbeat(space: LeaseSpace, owner: string, ttlMs: number): Promise<boolean> {
    if (space.alive === undefined) return true
    const key = space.alive + owner
    const was = this.live(key) !== undefined
    this.values.set(key, { value: '1', expiresAt: this.now() + ttlMs })
    return was
  }

  /** Whether `holder` is a heartbeat owner whose heartbeat is gone. */
  private lapsed(space: LeaseSpace, holder: string): boolean {
    return onHeartbeat(space, holder) && this.live(space.alive + holder) === undefined
  }

  async releaseMany(
    space: LeaseSpace,
    ids: readonly number[],
    set: string | null,
    owner: string,
    raise?: number,
    notes?: readonly (string | null)[],
  ): Promise<void> {
    const noteUntil = this.now() + NOTE_TTL_MS
    ids.forEach((id, i) => {
      const lease = `lease:${space.lease}${id}`
      if (this.live(lease)?.value !== owner) return
      if (set !== null) this.values.set(space.value + id, { value: set, expiresAt: Infinity })
      const note = set !== null && space.note ? notes?.[i] : null
      if (note) this.values.set(`${space.note}${id}`, { value: note, expiresAt: noteUntil })
      this.values.delete(lease)
    })
    const clock = space.clock ? parseClock(this.live(space.clock)?.value) : null
    if (clock && raise !== undefined && raise > clock.max)
      this.values.set(space.clock!, { value: `${clock.epoch}:${raise}`, expiresAt: Infinity })
  }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    this.sweep()
    if (this.live(key)) return false
    this.values.set(key, { value: '1', expiresAt: this.now() + ttlMs })
    return true
  }

  async claimValues(keys: string[], values: number[], ttlMs: number): Promise<(number | null)[]> {
    const now = this.now()
    let table = this.claimed.get(ttlMs)
    if (!table) this.claimed.set(ttlMs, (table = new ClaimTable(this.maxClaimed)))
    table.expire(now)
    const out = new Array<number | null>(keys.length)
    for (let i = 0; i < keys.length; i++) out[i] = table.claim(keys[i]!, values[i]!, now, ttlMs)
    return out
  }

  async releaseValues(keys: string[], values: number[]): Promise<void> {
    const now = this.now()
    for (const table of this.claimed.values())
      for (let i = 0; i < keys.length; i++) table.release(keys[i]!, values[i]!, now)
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

  hears(): boolean {
    return true
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.bus.removeAllListeners()
  }
}
