// A cache of store look-ups that a request never waits for while it is used: an entry is
// served for at most `maxAgeMs`, and once it is half that old the request that sees it starts
// one load in the background and is served the entry it has. Under steady traffic a hot
// entry is renewed before it expires, so no request pays for the store round trip. (With a
// plain expiring cache every request arriving after expiry ran its own chDB look-up, ~100 ms
// behind the ingest's queries for a read session: the closed-loop gateway's p99 was 520-550
// ms against 255-340 with this; docs/benchmarks.md.) Only a missing or expired entry is
// waited for, by one load that every request asking meanwhile shares.

/** Entries kept before expired ones are swept (unknown bearer tokens are entries too). */
const MAX_ENTRIES = 10_000

export class RefreshAhead<K, V> {
  private readonly entries = new Map<K, { value: V; at: number }>()
  private readonly loading = new Map<K, Promise<V>>()
  /** Bumped by `set`, `delete` and `clear`: a load begun before them does not keep its value. */
  private epoch = 0

  constructor(
    private readonly load: (key: K) => Promise<V>,
    private readonly maxAgeMs: number,
    private readonly now: () => number,
  ) {}

  get(key: K): Promise<V> {
    const e = this.entries.get(key)
    if (e) {
      const age = this.now() - e.at
      if (age < this.maxAgeMs) {
        // A failed renewal leaves the entry to expire; the request then waits and sees the error.
        if (age >= this.maxAgeMs / 2) this.fetch(key).catch(() => {})
        return Promise.resolve(e.value)
      }
    }
    return this.fetch(key)
  }

  /** Serves `value` for `key` from now on (what this instance just stored). */
  set(key: K, value: V): void {
    this.delete(key)
    this.entries.set(key, { value, at: this.now() })
  }

  /** Forgets `key` (changed elsewhere), including a load of it still under way. */
  delete(key: K): void {
    this.entries.delete(key)
    this.loading.delete(key)
    this.epoch++
  }

  /** Forgets every entry at once (a revocation), including loads still under way. */
  clear(): void {
    this.entries.clear()
    this.loading.clear()
    this.epoch++
  }

  private sweep(): void {
    const now = this.now()
    for (const [k, e] of this.entries) if (now - e.at >= this.maxAgeMs) this.entries.delete(k)
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear()
  }

  private fetch(key: K): Promise<V> {
    const running = this.loading.get(key)
    if (running) return running
    const epoch = this.epoch
    // The entry's age counts from before the read, so it never outlives `maxAgeMs` of truth.
    const at = this.now()
    const p: Promise<V> = this.load(key).then(
      (value) => {
        if (this.loading.get(key) === p) {
          this.loading.delete(key)
          if (this.epoch === epoch) {
            if (this.entries.size >= MAX_ENTRIES) this.sweep()
            this.entries.set(key, { value, at })
          }
        }
        return value
      },
      (err: unknown) => {
        if (this.loading.get(key) === p) this.loading.delete(key)
        throw err
      },
    )
    this.loading.set(key, p)
    return p
  }
}
