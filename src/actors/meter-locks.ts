// Per-meter ordering across instances sharing Redis: a meter's turn runs under a lease,
// and every turn that writes leaves a fresh random stamp. An actor whose last stamp is not
// the current one (another instance wrote, or Redis lost its keys) reloads from ClickHouse.
// The meters of a batch of turns take and give back their leases together, one script
// call each way, and the turns whose leases came back run as one batch (a turn per meter,
// with its own promises, body and INSERT piece, ran the Redis gateway bench at 8,200
// readings/s against 190,000 in-process).
// A lease outlives its turn by a few milliseconds (`lingerMs`): the meter's next turn here
// takes it over without Redis, and the leases left go back together. That next turn is
// there when requests overlap on the same meters, and when a client sends its next request
// as soon as it is answered (a gateway or head-end pushing, a replay, an import). A meter
// is kept that way for at most `maxHoldMs` from the moment its lease was taken; then it
// goes back, and if another instance asked for it meanwhile, Redis gives it to that one
// first (Coord.leaseMany), so a meter busy here is still had elsewhere in turn.
// A turn may outlast the lease's TTL (a slow store, a long decode): every lease held is
// renewed every third of the TTL, all of them in one script call, so another instance never
// takes a meter while its turn still runs here.
import crypto from 'node:crypto'
import type { LockedMeter, LockEntry, LockOutcome, MeterLocks } from './meter-actor.js'
import { apiError } from '../errors.js'
import type { Coord, LeaseSpace } from '../coord/coord.js'

/** Lease `lease:meter:<id>`, stamp `mstamp:<id>` (the key names every instance agrees on). */
const METERS: LeaseSpace = { lease: 'meter:', value: 'mstamp:' }

/** A lease this instance holds. */
interface Hold {
  /** When it was taken from Redis. */
  since: number
  /** The stamp of the last turn that wrote, not yet in Redis (written when the lease goes). */
  stamp: number | null
  /** No turn runs on it: the next one here may take it over. */
  idle: boolean
}

export class CoordMeterLocks implements MeterLocks {
  private readonly owner = crypto.randomUUID()
  /** Leases held here (in a turn or lingering), renewed by `renewTimer`. */
  private readonly held = new Map<number, Hold>()
  private renewTimer: NodeJS.Timeout | null = null
  private renewing = false
  private lingerTimer: NodeJS.Timeout | null = null
  private closed = false

  constructor(
    private readonly coord: Coord,
    private readonly ttlMs = 30_000,
    private readonly waitMs = 30_000,
    private readonly lingerMs = 10,
    private readonly maxHoldMs = 100,
  ) {}

  async withLocks(
    entries: readonly LockEntry[],
    fn: (locked: LockedMeter[]) => Promise<void>,
  ): Promise<LockOutcome[]> {
    const out = new Array<LockOutcome>(entries.length)
    const started = Date.now()
    // Leases lingering here after an earlier turn: taken over, nothing asked of Redis.
    let locked: LockedMeter[] = []
    let pending: number[] = []
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      const h = this.held.get(e.meterId)
      if (!h?.idle) {
        pending.push(i)
        continue
      }
      h.idle = false
      locked.push({ index: i, changed: e.seen !== h.stamp, untouched: false })
    }
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      const waiting: number[] = []
      if (pending.length) {
        const ids = pending.map((i) => entries[i]!.meterId)
        let stamps: (string | null)[]
        try {
          stamps = await this.coord.leaseMany(METERS, ids, this.owner, this.ttlMs)
        } catch (error) {
          for (const i of pending) out[i] = { error }
          // The leases taken over stay held; their stamps are written when they go.
          for (const l of locked) {
            out[l.index] = { error }
            this.held.get(entries[l.index]!.meterId)!.idle = true
          }
          if (locked.length) this.lingerThenRelease()
          return out
        }
        const now = Date.now()
        pending.forEach((i, k) => {
          const stamp = stamps[k] ?? null
          if (stamp === null) return void waiting.push(i)
          const seen = entries[i]!.seen
          const changed = stamp === '' || seen === null || Number(stamp) !== seen
          this.held.set(entries[i]!.meterId, { since: now, stamp: null, idle: false })
          locked.push({ index: i, changed, untouched: stamp === '' })
        })
      }
      if (locked.length) {
        this.renewWhileHeld()
        await this.run(entries, locked, fn, out)
      }
      if (waiting.length === 0) return out
      pending = waiting
      locked = []
      if (Date.now() - started > this.waitMs) {
        for (const i of pending)
          out[i] = {
            error: apiError(
              'Unavailable',
              `Meter ${entries[i]!.meterId} is busy on another instance; retry.`,
            ),
          }
        return out
      }
      await new Promise((r) => setTimeout(r, delay))
    }
  }

  /**
   * `fn` for meters whose leases are ours. After it, a lease lingers for the meter's next
   * turn here, unless the meter was kept long enough, the turn failed or the locks close:
   * then it goes back now.
   */
  private async run(
    entries: readonly LockEntry[],
    locked: LockedMeter[],
    fn: (locked: LockedMeter[]) => Promise<void>,
    out: LockOutcome[],
  ): Promise<void> {
    let failed = false
    try {
      await fn(locked)
    } catch (error) {
      failed = true
      for (const l of locked) out[l.index] = { error }
    }
    // The meters written together share a fresh stamp: each is told apart from every other
    // write by it all the same (a random 47-bit value per batch). A failed turn may have
    // written some of its rows: it writes no stamp, and the 'x' its lease was taken with
    // stays (every actor reads the meter again).
    const stamp = failed ? null : crypto.randomInt(1, 2 ** 47)
    const now = Date.now()
    const release: number[] = []
    for (const l of locked) {
      const id = entries[l.index]!.meterId
      const h = this.held.get(id)!
      h.stamp = stamp
      if (stamp !== null) out[l.index] = { seen: stamp }
      if (failed || this.closed || now - h.since >= this.maxHoldMs) release.push(id)
      else h.idle = true
    }
    if (release.length < locked.length) this.lingerThenRelease()
    // Sent now, so it reaches Redis before any next turn here asks for the same meters (one
    // connection, in order); not awaited: a holder that dies before it lands leaves 'x'.
    if (release.length) void this.release(release)
  }

  /** Gives the leases of `ids` back, each with the stamp its last turn left (one call per stamp). */
  private async release(ids: number[]): Promise<void> {
    const byStamp = new Map<number | null, number[]>()
    for (const id of ids) {
      const stamp = this.held.get(id)?.stamp ?? null
      this.held.delete(id)
      const same = byStamp.get(stamp)
      if (same) same.push(id)
      else byStamp.set(stamp, [id])
    }
    await Promise.all(
      [...byStamp].map(([stamp, same]) =>
        this.coord
          .releaseMany(METERS, same, stamp === null ? null : String(stamp), this.owner)
          // Redis unreachable: the lease lapses with its TTL and the stamp is not written,
          // so no actor anywhere trusts what it holds of the meter (it reloads).
          .catch(() => {}),
      ),
    )
  }

  /** The lingering leases go back together once no turn here took them over. */
  private lingerThenRelease(): void {
    if (this.lingerTimer) return
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = null
      void this.release(this.idleIds())
    }, this.lingerMs)
    this.lingerTimer.unref()
  }

  private idleIds(): number[] {
    const ids: number[] = []
    for (const [id, h] of this.held) if (h.idle) ids.push(id)
    return ids
  }

  /** Gives back every lingering lease at once; leases of turns still running go when they end. */
  async close(): Promise<void> {
    this.closed = true
    if (this.lingerTimer) clearTimeout(this.lingerTimer)
    this.lingerTimer = null
    await this.release(this.idleIds())
  }

  private renewWhileHeld(): void {
    if (this.renewTimer) return
    this.renewTimer = setInterval(() => this.renew(), Math.max(10, Math.floor(this.ttlMs / 3)))
    this.renewTimer.unref()
  }

  /** Extends every lease held here; stops the timer once none is. */
  private renew(): void {
    if (this.held.size === 0) {
      clearInterval(this.renewTimer!)
      this.renewTimer = null
      return
    }
    if (this.renewing) return
    this.renewing = true
    const ids = [...this.held.keys()]
    this.coord
      .leaseMany(METERS, ids, this.owner, this.ttlMs)
      // Redis unreachable: the turn's own writes fail or succeed on their own; keep trying.
      .catch(() => {})
      .finally(() => {
        this.renewing = false
      })
  }
}
