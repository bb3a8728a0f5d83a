// Per-meter ordering across instances sharing Redis: a meter's turn runs under a lease,
// and every turn that writes leaves a fresh random stamp. An actor whose last stamp is not
// the current one (another instance wrote, or Redis lost its keys) reloads from ClickHouse.
// The meters of a batch of turns take and give back their leases together, one script
// call each way, and the turns whose leases came back run as one batch (a turn per meter,
// with its own promises, body and INSERT piece, ran the Redis gateway bench at 8,200
// readings/s against 190,000 in-process).
// When requests overlap on the same meters, the meter's next turn here is already waiting
// as its turn ends: its lease is then kept for it, and that turn takes it over without
// Redis (a safety timer, `lingerMs`, gives it back if it is not). Every other lease goes
// back right after the turn, together with those of the turns ending with it. A meter is kept that way for at most `maxHoldMs` from
// the moment its lease was taken; if another instance asked for it in that time (Redis
// tells at the release), turns here leave it alone for `yieldMs`, longer than the other's
// next try, so it gets the meter rather than losing every race to this one.
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
  /** Leases to give back with the next batch of releases (`releaseSoon`). */
  private soon: number[] = []
  private soonScheduled = false
  private closed = false
  /** Meters another instance asked for: not leased here again before the time given. */
  private readonly yielding = new Map<number, number>()

  constructor(
    private readonly coord: Coord,
    private readonly ttlMs = 30_000,
    private readonly waitMs = 30_000,
    private readonly lingerMs = 10,
    private readonly maxHoldMs = 100,
    private readonly yieldMs = 100,
  ) {}

  async withLocks(
    entries: readonly LockEntry[],
    fn: (locked: LockedMeter[]) => Promise<void>,
  ): Promise<LockOutcome[]> {
    const out = new Array<LockOutcome>(entries.length)
    const started = Date.now()
    // Leases still held here after an earlier turn: taken over, nothing asked of Redis;
    // one kept long enough goes back first and is asked for again.
    let locked: LockedMeter[] = []
    let pending: number[] = []
    let later: number[] = []
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      const h = this.held.get(e.meterId)
      if (!h?.idle) pending.push(i)
      else if (started - h.since >= this.maxHoldMs) later.push(i)
      else {
        h.idle = false
        locked.push({ index: i, changed: e.seen !== h.stamp, untouched: false })
      }
    }
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      const waiting = later
      later = []
      if (this.yielding.size) pending = this.notYielding(pending, entries, waiting)
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
   * `fn` for meters whose leases are ours. After it, a lease is kept for the meter's next
   * turn if one waits here, unless the meter was kept long enough; every other goes back
   * with the stamp of its turn, at once if the turn failed or the locks close.
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
    let keep = false
    for (const l of locked) {
      const id = entries[l.index]!.meterId
      const h = this.held.get(id)!
      h.stamp = stamp
      if (stamp !== null) out[l.index] = { seen: stamp }
      if (failed || this.closed) release.push(id)
      else {
        h.idle = true
        if (entries[l.index]!.waiting != null && now - h.since < this.maxHoldMs) keep = true
        else this.soon.push(id)
      }
    }
    if (keep) this.lingerThenRelease()
    if (this.soon.length) this.releaseSoon()
    if (release.length) await this.release(release)
  }

  /**
   * The leases not kept go back together once the turns ending now have: after them, not
   * awaited by them (a holder that dies before leaves 'x'), and one call for many turns.
   */
  private releaseSoon(): void {
    if (this.soonScheduled) return
    this.soonScheduled = true
    setImmediate(() => {
      this.soonScheduled = false
      // (one a next turn took over meanwhile is not idle: it goes when that turn ends)
      const ids = this.soon.filter((id) => this.held.get(id)?.idle)
      this.soon = []
      if (ids.length) void this.release(ids)
    })
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
          .then((wanted) => {
            const now = Date.now()
            // (entries past their time are dropped when the meter is asked for again)
            if (this.yielding.size > 10_000)
              for (const [id, until] of this.yielding) if (until <= now) this.yielding.delete(id)
            for (const id of wanted) this.yielding.set(id, now + this.yieldMs)
          })
          // Redis unreachable: the lease lapses with its TTL and the stamp is not written,
          // so no actor anywhere trusts what it holds of the meter (it reloads).
          .catch(() => {}),
      ),
    )
  }

  /** `pending` without the meters yielded to another instance for now (those go to `waiting`). */
  private notYielding(pending: number[], entries: readonly LockEntry[], waiting: number[]) {
    const now = Date.now()
    const go: number[] = []
    for (const i of pending) {
      const id = entries[i]!.meterId
      const until = this.yielding.get(id)
      if (until === undefined) go.push(i)
      else if (until > now) waiting.push(i)
      else {
        this.yielding.delete(id)
        go.push(i)
      }
    }
    return go
  }

  /** The leases kept for a next turn go back together if no turn took them over in time. */
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
