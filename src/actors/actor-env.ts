// What the meter actors run against, handed in once by the ingest stage (ingest/build.ts)
// and shared by the registry, each batch of turns (turns.ts) and every actor: the store and
// its history loader, the outbox, the cross-instance locks, the clock. Its own module: it
// says what the actors need from the rest of the service, apart from how an actor uses it
// (a test builds one without the actor).
import type { Outbox } from '../events/outbox.js'
import type { HistoryLoader } from '../store/history.js'
import type { Store } from '../store/store.js'
import type { MeterLocks } from './meter-lock-contract.js'

export interface ActorEnv {
  /**
   * How much a window keeps (WINDOW_SPAN_MS, WINDOW_MAX in meter-actor.ts; tests shrink it
   * to reach the store).
   */
  window?: { spanMs: number; maxPerKind: number }
  store: Store
  history: HistoryLoader
  /** Set on shutdown: a turn that has not started yet is refused (503). */
  stopping?: boolean
  outbox: Outbox
  /** Per-meter mutual exclusion and change counter across instances (Redis); null alone. */
  locks: MeterLocks | null
  /**
   * True once for a meter this instance created that no actor has used yet
   * (MeterRepo.takeUnused): its first actor needs no history, whichever request makes it.
   */
  takeUnused: (meterId: number) => boolean
  now: () => number
}
