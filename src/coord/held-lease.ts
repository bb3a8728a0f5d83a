// A lease held for as long as some work runs: taken once, renewed every third of its TTL so
// a long piece of work never outlives it, released at the end. If a renewal finds the lease
// taken by someone else (this process stalled past the TTL), `lost` turns true and the
// holder is expected to stop at its next step.
import type { Coord } from './coord.js'

export class HeldLease {
  private timer: NodeJS.Timeout | null = null
  private renewing: Promise<void> | null = null
  lost = false

  private constructor(
    private readonly coord: Coord,
    readonly name: string,
    readonly owner: string,
    readonly ttlMs: number,
  ) {}

  /** The lease held and kept renewed, or null when someone else holds it. */
  static async acquire(
    coord: Coord,
    name: string,
    owner: string,
    ttlMs: number,
  ): Promise<HeldLease | null> {
    if (!(await coord.lease(name, owner, ttlMs))) return null
    const held = new HeldLease(coord, name, owner, ttlMs)
    held.timer = setInterval(() => held.renew(), Math.max(10, Math.floor(ttlMs / 3)))
    held.timer.unref()
    return held
  }

  private renew(): void {
    if (this.renewing || this.lost) return
    this.renewing = this.coord
      .lease(this.name, this.owner, this.ttlMs)
      .then(
        (ok) => {
          if (!ok) this.lost = true
        },
        // Coordination unreachable: keep trying; the TTL decides if it comes back too late.
        () => {},
      )
      .finally(() => {
        this.renewing = null
      })
  }

  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.renewing
    if (!this.lost) await this.coord.release(this.name, this.owner).catch(() => {})
  }
}
