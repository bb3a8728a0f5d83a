// Coordination primitives shared by every rule that must hold across instances: rate
// limits, caps, id sequences, leases (scheduler line, per-meter ownership), short-lived
// claims (idempotency) and invalidation messages. In-process for one instance; Redis with
// atomic Lua scripts when REDIS_URL is set.

export interface TakeResult {
  ok: boolean
  /** Count in the window after this call (unchanged when refused). */
  count: number
  /** Milliseconds until the window resets. */
  resetMs: number
}

/** Names of numbered leases and their companion values (`Coord.leaseMany`). */
export interface LeaseSpace {
  lease: string
  value: string
  /**
   * The name of a clock the space's holders share, if any: `leaseMany` reads it and
   * `releaseMany` raises it. It starts in a new epoch whenever it is read and missing (first
   * use, or the store lost its keys), so a reader can tell that it started over.
   */
  clock?: string
  /**
   * The prefix of the space's hand-over notes, if it has them: a note a releasing holder
   * leaves beside a companion value (`releaseMany`), kept for `NOTE_TTL_MS`, read by the next
   * holder that takes the lease (`leaseMany`).
   */
  note?: string
  /**
   * The prefix of the channels a holder hears on when others want its leases: a `leaseMany`
   * refused a lease because `holder` holds it publishes the refused ids (comma-separated) on
   * `<want><holder>`, each time it is refused. A holder that keeps idle leases gives those
   * back soon (lease-holds.ts).
   */
  want?: string
  /**
   * The prefix of its holders' heartbeat keys. A lease held by an owner whose name starts
   * with `HEARTBEAT_MARK` is that owner's only while `<alive><owner>` lives: every
   * `leaseMany` of the owner sets it for its ttl, and so does `heartbeat`; once it lapses
   * (the holder died, or lost Redis for a ttl) the next `leaseMany` of another owner takes
   * the lease as if it were free. Such leases live `HEARTBEAT_LEASE_TTL_MS` as keys, so a
   * holder keeping thousands renews them rarely (every lease renewed every third of its ttl
   * was ~17 % of a 40,000-meter fleet's rate with Redis at a ttl of 10 s). Other owners'
   * leases (an older release's) live by their ttl alone, as in a space without.
   */
  alive?: string
}

/** The first character of an owner whose leases live by its heartbeat (`LeaseSpace.alive`). */
export const HEARTBEAT_MARK = '~'

/** How long a lease of a heartbeat owner lives as a key (`LeaseSpace.alive`). */
export const HEARTBEAT_LEASE_TTL_MS = 600_000

/** How long a hand-over note is kept: it serves the next holder, or nobody. */
export const NOTE_TTL_MS = 30_000

/** A shared clock as `leaseMany` read it: its epoch and the highest number it was raised to. */
export interface LeaseClock {
  epoch: string
  max: number
}

/** A clock's stored text (`<epoch>:<max>`) as a LeaseClock; null if it is not one. */
export function parseClock(text: unknown): LeaseClock | null {
  if (typeof text !== 'string') return null
  const at = text.lastIndexOf(':')
  const max = Number(text.slice(at + 1))
  return at > 0 && Number.isFinite(max) ? { epoch: text.slice(0, at), max } : null
}

/** What `leaseMany` answers: per id, as documented there; the space's clock, if it has one. */
export interface LeaseBatch {
  values: (string | null)[]
  clock: LeaseClock | null
  /** Per id of a space with notes: the note left beside the value, where a lease was newly taken. */
  notes?: (string | null)[]
}

export interface Coord {
  readonly kind: 'memory' | 'redis'
  /** Fixed window counter: add `by` unless that would pass `limit`. */
  take(key: string, limit: number, windowMs: number, by?: number): Promise<TakeResult>
  /** Gives back what a `take` took (an admitted item that was not stored after all). */
  giveBack(key: string, by: number): Promise<void>
  /**
   * Next value of a sequence. When the sequence is unknown here (first use, or Redis lost
   * its keys) it starts above `floor()`, the store's current maximum.
   */
  nextId(sequence: string, floor: () => Promise<number>): Promise<number>
  /** Reserves `count` consecutive ids of a sequence in one step; returns the first. */
  nextIds(sequence: string, count: number, floor: () => Promise<number>): Promise<number>
  /**
   * A shared hybrid logical clock: a value above every value this clock `name` returned to
   * any instance, and above `candidate` (the caller's own clock). Row versions come from it,
   * so a later update wins even when instances' wall clocks disagree.
   */
  hlc(name: string, candidate: number): Promise<number>
  /** Acquires or renews a lease; true when `owner` holds it for the next `ttlMs`. */
  lease(name: string, owner: string, ttlMs: number): Promise<boolean>
  release(name: string, owner: string): Promise<void>
  /**
   * Many numbered leases in one call: per id the lease `lease:<space.lease><id>`, read
   * together with its companion value `<space.value><id>`. Per id: null when held by someone
   * else, otherwise the companion's current value ('' when unset). An owner refused is next:
   * once the lease is free, it is refused to others (for up to a second) until that owner
   * takes it. A lease newly taken (not one renewed) sets its companion to 'x' until
   * `releaseMany` writes it: if the holder dies in between, the next one reads 'x', not the
   * value from before. In a space with `want`, the ids refused because another owner holds
   * them are published to that holder. Used for per-meter turns: one round trip for all
   * meters of a request.
   */
  leaseMany(
    space: LeaseSpace,
    ids: readonly number[],
    owner: string,
    ttlMs: number,
  ): Promise<LeaseBatch>
  /**
   * Sets `owner`'s heartbeat in a space with `alive` for `ttlMs`; false where it had lapsed
   * (or was never set): another owner may have taken its leases meanwhile.
   */
  heartbeat(space: LeaseSpace, owner: string, ttlMs: number): Promise<boolean>
  /**
   * Releases the leases of `ids` held by `owner`, setting their companions to `set` first
   * (null: leave them), and raises the space's clock to `raise` (if it is higher). Where the
   * space has notes and `set` is not null, `notes[i]` (if not null or '') is left for the
   * next holder of `ids[i]`.
   */
  releaseMany(
    space: LeaseSpace,
    ids: readonly number[],
    set: string | null,
    owner: string,
    raise?: number,
    notes?: readonly (string | null)[],
  ): Promise<void>
  /** Sets `key` only when absent; true when this call set it. */
  claim(key: string, ttlMs: number): Promise<boolean>
  /**
   * Per key: sets it to its value (a number) for `ttlMs` unless it holds a live one; null
   * where this call set it, else the value it holds (a key named twice: the second sees the
   * first's value). One round trip for all. These keys are read only through this call: the
   * in-process coordinator keeps them apart from the others, as hashes, oldest first and
   * bounded (claim-table.ts).
   */
  claimValues(keys: string[], values: number[], ttlMs: number): Promise<(number | null)[]>
  /**
   * Per key of `claimValues`: drops it where it still holds this value (a claim whose reading
   * was not stored, so a later claimer gets it; one that holds another value is left).
   */
  releaseValues(keys: string[], values: number[]): Promise<void>
  unclaim(keys: string[]): Promise<void>
  get(key: string): Promise<string | null>
  /** Atomically increments an integer key (created at 0) and returns the new value. */
  incr(key: string): Promise<number>
  set(key: string, value: string, ttlMs?: number): Promise<void>
  publish(channel: string, message: string): Promise<void>
  subscribe(channel: string, handler: (message: string) => void): Promise<void>
  /**
   * Whether messages published now on the channels subscribed here reach their handlers:
   * false while the subscriber's connection is down or its subscriptions not acknowledged
   * again, when messages are lost (lease-holds.ts keeps leases long only while it hears).
   */
  hears(): boolean
  /** Throws when the backing service is unreachable. */
  ping(): Promise<void>
  close(): Promise<void>
}

export const windowStart = (now: number, windowMs: number) => now - (now % windowMs)
