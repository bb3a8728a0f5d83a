// The meter leases this instance holds, and when each goes back. A lease outlives its turn:
// the meter's next turn here takes it over without Redis. A lease nobody else asked for is
// kept until its meter has been idle for `keepMs` (METER_LEASE_KEEP_S, 20 minutes: a
// gateway or head-end pushing, a replay, an import, and the meters of a deployment that
// report every 15 minutes: one lease cycle for many turns, where a cycle per turn cost Redis
// ~16 µs of CPU per reading, more than the ingest's own main thread spent on it). Another
// instance refused a lease tells its holder (`LeaseSpace.want`, a message on the holder's
// channel, sent again at every refusal); from then the lease outlives its turn by a few
// milliseconds only (`lingerMs`), for the next turn when requests overlap on the same
// meters, and the meter is kept for at most `maxHoldMs` from when its lease was taken; then
// it goes back, and Redis gives it to the instance that asked first (Coord.leaseMany), so a
// meter busy here is still had elsewhere in turn. A meter nobody asked for goes back after
// `keepMs` too, busy or not. While this instance does not hear its channel (the
// subscriber's connection down: `Coord.hears`) those messages are lost, and `keepMs` is
// `unheardKeepMs` (5 s): a refusal nobody hears waits that long at most.

/** A lease this instance holds. */
export interface Hold {
  /** When it was taken from Redis. */
  since: number
  /** The stamp of the last turn that wrote, not yet in Redis (written when the lease goes). */
  stamp: string | null
  /** The shared clock's epoch when the lease was taken (its stamps carry it). */
  epoch: string
  /** No turn runs on it: the next one here may take it over. */
  idle: boolean
  /** When its last turn here ended. */
  idleSince: number
  /**
   * Another instance was refused it, or it came from another instance (or is new to its
   * actor): it goes back as soon as `lingerMs`/`maxHoldMs` allow.
   */
  wanted: boolean
  /** When its key in Redis was last given its full ttl (`HEARTBEAT_LEASE_TTL_MS`). */
  renewed: number
  /**
   * Another instance may have had it since its last turn here (this instance's heartbeat
   * may have lapsed, or its key's renewal was refused or overdue): no turn here takes it
   * over without Redis again, and it goes back as soon as `lingerMs` allows.
   */
  broken: boolean
  /** The stamp found when it was taken: where the hand-over note starts. */
  found: string
  /** Per turn ended here, its line of the hand-over note; null: no note (a line missing, or too long). */
  lines: string[] | null
  chars: number
}

export interface HoldOptions {
  lingerMs: number
  maxHoldMs: number
  keepMs: number
  unheardKeepMs: number
  maxHeld: number
  /** Whether the refusals of others reach this instance now (`Coord.hears`). */
  hears: () => boolean
  /** Gives these leases back to Redis (and drops their holds). */
  giveBack: (ids: number[]) => void
}

export class LeaseHolds {
  /** In the order the leases were taken (a Map keeps it): the trim gives back the oldest. */
  private readonly held = new Map<number, Hold>()
  private lingerTimer: NodeJS.Timeout | null = null
  private keepTimer: NodeJS.Timeout | null = null
  /** When the keep sweep last read the holds (`keepThenRelease`). */
  private sweptAt = 0
  private trimming = false

  constructor(private readonly o: HoldOptions) {}

  get size(): number {
    return this.held.size
  }

  get(id: number): Hold | undefined {
    return this.held.get(id)
  }

  add(id: number, h: Hold): void {
    this.held.set(id, h)
  }

  delete(id: number): void {
    this.held.delete(id)
  }

  entries(): IterableIterator<[number, Hold]> {
    return this.held.entries()
  }

  /** How long a lease nobody asked for is kept now (`keepMs`, `unheardKeepMs`). */
  keepFor(): number {
    return this.o.hears() ? this.o.keepMs : this.o.unheardKeepMs
  }

  /** Whether `h`, its turn ended at `now`, was kept long enough (`keep`: `keepFor()`). */
  heldEnough(h: Hold, now: number, keep: number): boolean {
    return now - h.since >= (h.wanted ? this.o.maxHoldMs : keep)
  }

  /** Another instance was refused these meters (comma-separated ids). */
  wantedElsewhere(ids: string): void {
    let idle = false
    for (const id of ids.split(',')) {
      const h = this.held.get(Number(id))
      if (!h || h.wanted) continue
      h.wanted = true
      idle ||= h.idle
    }
    if (idle) this.lingerThenRelease()
  }

  /** No turn runs on `h` from `now`: it is kept for the meter's next turn here, for a while. */
  idleFrom(h: Hold, now: number): void {
    h.idle = true
    h.idleSince = now
    if (h.wanted) this.lingerThenRelease()
    else this.keepThenRelease()
    if (this.held.size > this.o.maxHeld) this.trim()
  }

  /** The heartbeat may have lapsed: any lease held here may be another's now. All go back soon. */
  breakAll(): void {
    for (const h of this.held.values()) this.breakHold(h)
  }

  /** `h` may have been another instance's meanwhile (`Hold.broken`). */
  breakHold(h: Hold): void {
    if (h.broken) return
    h.broken = h.wanted = true
    if (h.idle) this.lingerThenRelease()
  }

  /** The idle leases `which` picks, in the order they were taken; at most `max` of them. */
  idleIds(which: (h: Hold) => boolean = () => true, max = Infinity): number[] {
    const ids: number[] = []
    for (const [id, h] of this.held) {
      if (ids.length >= max) break
      if (h.idle && which(h)) ids.push(id)
    }
    return ids
  }

  /** No more sweeps: what is idle now goes back with the caller's own release. */
  stop(): void {
    if (this.lingerTimer) clearTimeout(this.lingerTimer)
    if (this.keepTimer) clearTimeout(this.keepTimer)
    this.lingerTimer = null
    this.keepTimer = null
  }

  /**
   * Past `maxHeld`: idle leases go back until a tenth under it, in the order they were taken,
   * once the turns ending now have all become idle. A first contact of millions of meters,
   * or an import, would otherwise keep a record here and a key in Redis for every one of
   * them for `keepMs`.
   */
  private trim(): void {
    if (this.trimming) return
    this.trimming = true
    setImmediate(() => {
      this.trimming = false
      const over = this.held.size - Math.floor(this.o.maxHeld * 0.9)
      if (over > 0) this.o.giveBack(this.idleIds(undefined, over))
    })
  }

  /** The idle leases others asked for go back together once no turn here took them over. */
  private lingerThenRelease(): void {
    if (this.lingerTimer) return
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = null
      this.o.giveBack(this.idleIds((h) => h.wanted))
    }, this.o.lingerMs)
    this.lingerTimer.unref()
  }

  /**
   * The idle leases nobody else asked for go back once idle for `keepFor()`, a sweep at a
   * time: as often as `unheardKeepMs` needs, since the channel may go unheard any time.
   */
  private keepThenRelease(): void {
    if (this.keepTimer) return
    this.keepTimer = setTimeout(
      () => {
        this.keepTimer = null
        const now = Date.now()
        // A sweep reads every hold (hundreds of thousands in a large fleet): while heard, a
        // twentieth of the long keep apart; while not, at every tick, for the short one.
        if (!this.o.hears() || now - this.sweptAt >= this.o.keepMs / 20) {
          this.sweptAt = now
          const before = now - this.keepFor()
          this.o.giveBack(this.idleIds((h) => h.idleSince <= before))
        }
        for (const h of this.held.values()) if (h.idle) return this.keepThenRelease()
      },
      Math.max(10, this.o.unheardKeepMs / 4),
    )
    this.keepTimer.unref()
  }
}
