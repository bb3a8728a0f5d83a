// What a request hands the actors for one meter, and how each reading is answered. The
// registry queues a request's part as a `Joined` until the meter's next turn takes it, and
// the turn writes each reading's verdict onto the reading itself. Its own module because the
// ingest pipeline builds these readings and reads their verdicts without the actor that
// handles them (meter-actor.ts).
import type { Meter } from '../store/meter-row.js'
import type { RawPayload } from '../store/reading-row.js'
import type { Kind } from './quality/index.js'

export interface ActorReading {
  /** Position in the request, to put the answer back in order. */
  ref: number
  kind: Kind
  recordedAt: number
  value: number
  unit: string | null
  /** The raw payload (store/reading-row.ts `RawPayload`). */
  rawPayload: RawPayload
  /** Device status carried by this reading, if any. */
  status: { rawFlags: string[]; statuses: string[] } | null
  /**
   * Set by the turn that handles the reading: stored, or a duplicate. The caller reads it
   * once its turn ended (a Map of verdicts per turn was one more object per reading of a
   * gateway request, whose turns hold one reading each).
   */
  verdict?: ActorVerdict | null
}

export type ActorVerdict = 'created' | 'duplicate'

/** One request's readings of this meter, waiting for (or in) a turn. */
export interface Joined {
  meter: Meter
  readings: ActorReading[]
  /**
   * Called once the turn ended, with `slot`: without an error, every reading carries its
   * `verdict`. One callback serves every meter of a request (registry.ts `handleMany`).
   */
  done: (err: unknown, slot: number) => void
  /** Which of its caller's parts this is. */
  slot: number
}
