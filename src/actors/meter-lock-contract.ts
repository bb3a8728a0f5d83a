// The lock contract between a batch of turns and whatever keeps each meter's turns one at a
// time across instances: turns.ts hands it the batch's actors as entries and runs its phases
// for the meters whose locks are held; the answer per entry is the stamp to remember or why
// the turn did not run. CoordMeterLocks (meter-locks.ts) keeps it over Redis leases; a lone
// instance has none (ActorEnv.locks null). Its own module so the actors see only these few
// types, and the lease machinery behind them depends on the contract, not on the actor.

/** A meter whose turn is to run under its lock, and the stamp its actor last saw. */
export interface LockEntry {
  readonly meterId: number
  readonly seen: string | null
  /** After a turn that ended well: its line of the hand-over note (handover-note.ts); null if none. */
  note?(): string | null
}

/**
 * An entry whose lock is held: whether another instance wrote since `seen`, or nobody ever;
 * and, where it did, the row version from which on its rows are all the actor misses (null:
 * the actor reloads), and the note of what it wrote where one was left (handover-note.ts).
 */
export interface LockedMeter {
  index: number
  changed: boolean
  untouched: boolean
  since: number | null
  note: string | null
  /** The turn's rows go into a hand-over note (the meter is likely to move on). */
  noting: boolean
}

/** Per entry: the stamp its actor sees now, or why its turn did not run (or failed). */
export type LockOutcome = { seen: string | null } | { error: unknown }

export interface MeterLocks {
  /**
   * Runs `fn` holding the locks of the entries: once for all whose locks were taken at
   * once, again for those that had to be waited for. `changed` says whether another
   * instance wrote since `seen`, `untouched` that no turn of the meter has ended anywhere.
   */
  withLocks(
    entries: readonly LockEntry[],
    fn: (locked: LockedMeter[]) => Promise<void>,
  ): Promise<LockOutcome[]>
}
