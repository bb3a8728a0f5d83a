// The actors of all meters: created on first use, evicted when idle past a bound so memory
// stays flat with millions of meters (an evicted actor reloads its window from the store).
// The bounds follow the heap V8 may use (`registryBounds`).
// Turns are scheduled here: an idle actor handed readings is ready, and every actor that
// becomes ready in the same tick (the meters of one request, or those whose previous batch
// just ended) goes into one batch of turns (turns.ts). A busy actor collects the requests
// that arrive meanwhile; they share its next turn.
import v8 from 'node:v8'
import type { Meter } from '../store/meter-row.js'
import { MeterActor } from './meter-actor.js'
import type { ActorEnv } from './actor-env.js'
import type { ActorReading, ActorVerdict, Joined } from './actor-reading.js'
import { runTurns, type BatchEntry } from './turns.js'

/** One meter's part of a request. */
export interface MeterReadings {
  meter: Meter
  readings: ActorReading[]
}

/** A meter's part of a request once its turn ended: its readings carry their `verdict`. */
export type TurnResult = PromiseSettledResult<void>

const FULFILLED: TurnResult = Object.freeze({ status: 'fulfilled', value: undefined })

/** Heap per held reading and per actor, with room to spare (docs/benchmarks.md). */
const BYTES_PER_READING = 64
const BYTES_PER_ACTOR = 1024

/**
 * How many actors and held readings the registry keeps for a heap of `heapLimit` bytes: a
 * quarter of it for the windows, a tenth for the actors. On Node's default 4 GiB heap that
 * is ~16.8 M readings (~37,000 meters reporting every minute, ~138,000 every 15 minutes) and
 * ~420,000 actors; `--max-old-space-size` moves both. Fixed at 2 M readings and 20,000 actors
 * before, a fleet of 40,000 meters reloaded a window from the store for nearly every reading:
 * 13–17 against 4.8 main-thread ms per 1,000 readings for 16,000 meters
 * (`bench/ingest/pipeline-cost.ts --fleet`).
 */
export function registryBounds(heapLimit: number): { maxActors: number; maxReadings: number } {
  return {
    maxActors: Math.max(1_000, Math.floor((heapLimit * 0.1) / BYTES_PER_ACTOR)),
    maxReadings: Math.max(100_000, Math.floor((heapLimit * 0.25) / BYTES_PER_READING)),
  }
}

/** The bounds for this process's heap (`node --max-old-space-size` moves them). */
export const BOUNDS = registryBounds(v8.getHeapStatistics().heap_size_limit)

export class ActorRegistry {
  private readonly actors = new Map<number, MeterActor>()
  private handled = 0
  private clock = 0
  /** Actors evicted since start (their next reading loads their window from the store). */
  evicted = 0
  private ready: MeterActor[] = []
  private scheduled = false

  constructor(
    readonly env: ActorEnv,
    private readonly maxActors = BOUNDS.maxActors,
    // Windows of dense meters (1-minute data keeps up to 2 × 512) reach this before the
    // actor count does.
    private readonly maxReadings = BOUNDS.maxReadings,
  ) {}

  get size(): number {
    return this.actors.size
  }

  /** Readings held in all windows (a pass over every actor: for metrics, not per turn). */
  held(): number {
    let n = 0
    for (const a of this.actors.values()) n += a.held
    return n
  }

  /** The bounds this registry evicts at. */
  get bounds(): { maxActors: number; maxReadings: number } {
    return { maxActors: this.maxActors, maxReadings: this.maxReadings }
  }

  /** Turns running or waiting over all actors (the mailbox-depth metric). */
  depth(): number {
    let d = 0
    for (const a of this.actors.values()) d += a.depth
    return d
  }

  /** One meter's readings; resolves with their verdicts by ref once they are stored. */
  handle(meter: Meter, readings: ActorReading[]): Promise<Map<number, ActorVerdict>> {
    return new Promise((resolve, reject) =>
      this.enqueue(meter, readings, 0, (err) =>
        err === undefined
          ? resolve(new Map(readings.map((r) => [r.ref, r.verdict ?? 'duplicate'])))
          : reject(err),
      ),
    )
  }

  /**
   * Every meter of a request; settles once each one's turn ended (one promise per request,
   * not per meter), each entry as Promise.allSettled would give it. The readings of a
   * fulfilled entry carry their `verdict`.
   */
  handleMany(parts: MeterReadings[]): Promise<TurnResult[]> {
    return new Promise((resolve) => {
      const out: TurnResult[] = new Array(parts.length)
      let left = parts.length
      if (!left) return resolve(out)
      // One callback for the request, told which part's turn ended (a closure per meter
      // was one more object per reading of a gateway request).
      const done = (err: unknown, slot: number) => {
        out[slot] = err === undefined ? FULFILLED : { status: 'rejected', reason: err }
        if (--left === 0) resolve(out)
      }
      for (let i = 0; i < parts.length; i++)
        this.enqueue(parts[i]!.meter, parts[i]!.readings, i, done)
    })
  }

  private enqueue(
    meter: Meter,
    readings: ActorReading[],
    slot: number,
    done: Joined['done'],
  ): void {
    let actor = this.actors.get(meter.id)
    if (!actor) {
      // A meter created here that no actor has used has nothing stored: whichever request
      // reaches it first, its actor starts without asking the store for history.
      const unused = this.env.takeUnused(meter.id)
      this.actors.set(meter.id, (actor = new MeterActor(meter, this.env, unused)))
    }
    // Recency by a counter, not by re-inserting into the Map (a delete and a set per meter
    // of every request): eviction sorts, and runs once per 10 % of maxActors new actors.
    actor.lastUsed = ++this.clock
    if (this.actors.size > this.maxActors) this.evict()
    // Summing every window costs a pass over all actors: once per maxActors turns (a
    // pass per 1,000 was 12 % of the ingest thread when provisioning 20k meters).
    else if (++this.handled % this.maxActors === 0) this.evictBeyondBudget()
    const entry: Joined = { meter, readings, done, slot }
    if (actor.waiting) {
      actor.waiting.push(entry)
      return
    }
    actor.waiting = [entry]
    if (!actor.busy) this.makeReady(actor)
  }

  private makeReady(actor: MeterActor): void {
    this.ready.push(actor)
    if (this.scheduled) return
    this.scheduled = true
    // A microtask, not now: the other meters of the same request are handed in by the same
    // synchronous loop and join this batch.
    queueMicrotask(() => this.flush())
  }

  private flush(): void {
    this.scheduled = false
    const batch: BatchEntry[] = this.ready.map((actor) => {
      const group = actor.waiting!
      actor.waiting = null
      actor.busy = true
      return { actor, group }
    })
    this.ready = []
    // runTurns answers every request itself; whatever happens, the actors are free again.
    const release = () => {
      for (const { actor } of batch) {
        actor.busy = false
        if (actor.waiting) this.makeReady(actor)
      }
    }
    runTurns(this.env, batch).then(release, release)
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
    // Rows were written apart from the actors: the meter's first actor must load them.
    this.env.takeUnused(meterId)
    const a = this.actors.get(meterId)
    if (a && a.depth === 0) this.actors.delete(meterId)
    else a?.reset()
  }

  /** Idle actors, least recently used first. */
  private idleByAge(): MeterActor[] {
    const idle: MeterActor[] = []
    for (const a of this.actors.values()) if (a.depth === 0) idle.push(a)
    return idle.sort((a, b) => a.lastUsed - b.lastUsed)
  }

  /** Least recently used idle actors go until the windows held are under 90 % of the budget. */
  private evictBeyondBudget(): void {
    let held = this.held()
    if (held <= this.maxReadings) return
    for (const a of this.idleByAge()) {
      if (held <= this.maxReadings * 0.9) break
      held -= a.held
      this.actors.delete(a.meterId)
      this.evicted++
    }
  }

  private evict(): void {
    for (const a of this.idleByAge()) {
      if (this.actors.size <= this.maxActors * 0.9) break
      this.actors.delete(a.meterId)
      this.evicted++
    }
  }
}
