// The heartbeat the meter leases held here live by (LeaseSpace.alive): every third of the
// TTL it is set again, so another instance never takes a meter while its turn still runs
// here however long the turn, and the thousands of leases a busy fleet keeps cost nothing to
// keep (each renewed every third of the TTL was ~17 % of the fleet's rate, a script call per
// 2,000). The TTL (10 s) bounds what an instance's death costs the others: the meters it
// kept are taken over once its heartbeat lapses (with 30 s, every meter a killed instance
// had used in its last 5 s stalled its next requests 30 s). A heartbeat found lapsed here
// (the event loop stalled, Redis unreachable for a TTL) means others may have taken some of
// these meters: every lease held goes back as soon as its turn allows, and none is taken
// over without Redis again (`LeaseHolds.breakAll`). So does a lease whose key's renewal was
// refused (another instance holds it) or failed for most of the key's life.
import type { Coord, LeaseBatch, LeaseSpace } from '../coord/coord.js'
import type { LeaseHolds } from './lease-holds.js'

/** Leases renewed or given back per script call: one script over thousands would hold Redis up for everyone meanwhile. */
export const CALL_CHUNK = 2_000

export interface HeartbeatOptions {
  space: LeaseSpace
  owner: string
  ttlMs: number
  /** How long after its last renewal a held lease's key is renewed. */
  keyRenewMs: number
  /** How long after its last renewal a held lease's key is still trusted to be this instance's. */
  keyTrustedMs: number
}

export class LeaseHeartbeat {
  /**
   * When a call last set this instance's heartbeat (its start: the key lives at least the
   * ttl from then), as long as every such call came within the ttl of the one before.
   */
  private aliveAt = 0
  private timer: NodeJS.Timeout | null = null
  private beating = false
  /** When the heartbeat last read the holds for keys to renew (`beat`). */
  private renewScanAt = 0

  constructor(
    private readonly coord: Coord,
    private readonly holds: LeaseHolds,
    private readonly o: HeartbeatOptions,
  ) {}

  /**
   * Before a turn takes kept leases over: the heartbeat may have lapsed since it was last set
   * (the event loop stalled, Redis out of reach), and another instance may have taken any of
   * them meanwhile. Checked by the turn, not left to the next beat, whose answer could come
   * after the turn took them over.
   */
  checkAt(now: number): void {
    if (now - this.aliveAt >= this.o.ttlMs) this.holds.breakAll()
  }

  /**
   * A call that set the heartbeat, started at `asked`, answered: the heartbeat lives until at
   * least the ttl from `asked`. Where it may have lapsed since the call before (this one came
   * more than a ttl after it), the kept leases may be others' (`LeaseHolds.breakAll`).
   */
  setAlive(asked: number): void {
    this.checkAt(Date.now())
    this.aliveAt = asked
  }

  /** Beats every third of the ttl while leases are held here. */
  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => this.tick(), Math.max(10, Math.floor(this.o.ttlMs / 3)))
    this.timer.unref()
  }

  /** Stops the timer once no lease is held; one beat at a time. */
  private tick(): void {
    if (this.holds.size === 0) {
      clearInterval(this.timer!)
      this.timer = null
      return
    }
    if (this.beating) return
    this.beating = true
    void this.beat().finally(() => {
      this.beating = false
    })
  }

  /** Sets the heartbeat, and renews the keys of the leases held for `keyRenewMs`. */
  private async beat(): Promise<void> {
    const asked = Date.now()
    let alive: boolean
    try {
      alive = await this.coord.heartbeat(this.o.space, this.o.owner, this.o.ttlMs)
    } catch {
      // Redis unreachable: the turns' own writes fail or succeed on their own; keep trying.
      return
    }
    if (!alive) this.holds.breakAll()
    this.setAlive(asked)
    const now = Date.now()
    // Reading every hold each beat cost as much as the keep sweep; a tenth of the renewal
    // age apart is soon enough (a key lives twice that age, and is trusted 90 % of it).
    if (now - this.renewScanAt < this.o.keyRenewMs / 10) return
    this.renewScanAt = now
    const old: number[] = []
    for (const [id, h] of this.holds.entries()) {
      if (h.broken || now - h.renewed < this.o.keyRenewMs) continue
      // Renewals failed for most of the key's life: it may lapse before the next one lands.
      if (now - h.renewed >= this.o.keyTrustedMs) this.holds.breakHold(h)
      else old.push(id)
    }
    await this.renewKeys(old)
  }

  /**
   * A call per `CALL_CHUNK` ids, one after another. A lease renewed is trusted again from the
   * call's start; one refused (another instance holds it now) is broken. The leases of a
   * call that failed are tried again at the next scan (`beat`).
   */
  private async renewKeys(ids: number[]): Promise<void> {
    for (let i = 0; i < ids.length; i += CALL_CHUNK) {
      const chunk = ids.slice(i, i + CALL_CHUNK)
      const asked = Date.now()
      let batch: LeaseBatch
      try {
        batch = await this.coord.leaseMany(this.o.space, chunk, this.o.owner, this.o.ttlMs)
      } catch {
        continue
      }
      chunk.forEach((id, k) => {
        const h = this.holds.get(id)
        if (!h || h.broken) return
        if (batch.values[k] === null) this.holds.breakHold(h)
        else h.renewed = asked
      })
    }
  }
}
