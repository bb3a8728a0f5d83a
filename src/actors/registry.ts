// The actors of all meters: created on first use, evicted when idle past a bound so memory
// stays flat with millions of meters (an evicted actor reloads its window from the store).
import type { Meter } from '../store/meters.js'
import { MeterActor, type ActorEnv, type ActorReading, type ActorVerdict } from './meter-actor.js'

export class ActorRegistry {
  private readonly actors = new Map<number, MeterActor>()
  private handled = 0

  constructor(
    readonly env: ActorEnv,
    private readonly maxActors = 20_000,
    // ~200 bytes per reading held (measured): 2 M readings ≈ 400 MB of windows. Windows of
    // dense meters (1-minute data keeps up to 2 × 256) hit this before the actor count.
    private readonly maxReadings = 2_000_000,
  ) {}

  get size(): number {
    return this.actors.size
  }

  /** Sum of mailbox depths (metrics). */
  depth(): number {
    let d = 0
    for (const a of this.actors.values()) d += a.mailbox.depth
    return d
  }

  handle(
    meter: Meter,
    readings: ActorReading[],
    fresh: boolean,
  ): Promise<Map<number, ActorVerdict>> {
    let actor = this.actors.get(meter.id)
    if (actor) this.actors.delete(meter.id)
    else actor = new MeterActor(meter, this.env, fresh)
    this.actors.set(meter.id, actor) // Map order = recency of use
    if (this.actors.size > this.maxActors) this.evict()
    // Summing every window costs a pass over all actors: once per maxActors turns (a
    // pass per 1,000 was 12 % of the ingest thread when provisioning 20k meters).
    else if (++this.handled % this.maxActors === 0) this.evictBeyondBudget()
    return actor.handle(meter, readings)
  }

  /**
   * Shutting down: turns not yet started are refused (their requests were answered 503 by
   * the drain deadline); running turns finish and their rows are flushed by the store.
   */
  stop(): void {
    this.env.stopping = true
  }

  /** Forget a meter's cached state (exchange recorded, meter deleted, backfill). */
  forget(meterId: number): void {
    const a = this.actors.get(meterId)
    if (a && a.mailbox.depth === 0) this.actors.delete(meterId)
    else a?.reset()
  }

  /** Least recently used idle actors go until the windows held are under 90 % of the budget. */
  private evictBeyondBudget(): void {
    let held = 0
    for (const a of this.actors.values()) held += a.held
    if (held <= this.maxReadings) return
    for (const [id, a] of this.actors) {
      if (held <= this.maxReadings * 0.9) break
      if (a.mailbox.depth === 0) {
        held -= a.held
        this.actors.delete(id)
      }
    }
  }

  private evict(): void {
    for (const [id, a] of this.actors) {
      if (this.actors.size <= this.maxActors * 0.9) break
      if (a.mailbox.depth === 0) this.actors.delete(id)
    }
  }
}
