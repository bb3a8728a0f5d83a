// A bound on cache staleness that does not rest on pub/sub alone. Each cached thing (a
// workspace's meters, profiles, event subscriptions) has a shared generation counter in the
// coordination store, bumped by every change. A cache remembers the generation it loaded
// and compares it at most every `checkEveryMs`: a pub/sub message missed across a reconnect
// (or Redis losing its keys) leaves an entry stale for at most that long. Pub/sub stays the
// fast path; this check costs one GET per key per interval, not one per request.
import type { Coord } from './coord.js'

/** How stale a cache entry can get when an invalidation message is lost. */
export const CACHE_CHECK_MS = 1000

export class Generations {
  private readonly seen = new Map<string, { gen: string; checkedAt: number }>()

  constructor(
    private readonly coord: Coord,
    private readonly name: string,
    private readonly checkEveryMs = CACHE_CHECK_MS,
    private readonly now: () => number = Date.now,
  ) {}

  private key(k: string | number): string {
    return `gen:${this.name}:${k}`
  }

  private async read(k: string | number): Promise<string | null> {
    // Coordination unreachable: keep serving the cache (writes fail with 503 meanwhile).
    return this.coord.get(this.key(k)).then(
      (v) => v ?? '',
      () => null,
    )
  }

  /** Call right before loading an entry: a change during the load is then noticed. */
  async loading(k: string | number): Promise<void> {
    const gen = await this.read(k)
    this.seen.set(String(k), { gen: gen ?? '?', checkedAt: this.now() })
  }

  /** True when the entry loaded for `k` is older than the shared generation. */
  async stale(k: string | number): Promise<boolean> {
    const s = this.seen.get(String(k))
    if (!s) return true
    const now = this.now()
    if (now - s.checkedAt < this.checkEveryMs) return false
    s.checkedAt = now
    const gen = await this.read(k)
    return gen !== null && gen !== s.gen
  }

  /**
   * After a change made here: bumps the shared generation. When nobody else changed `k`
   * since our load, our own (already updated) entry stays current.
   */
  async bump(k: string | number): Promise<void> {
    const n = await this.coord.incr(this.key(k)).catch(() => null)
    const s = this.seen.get(String(k))
    if (n !== null && s && (Number(s.gen) || 0) + 1 === n) s.gen = String(n)
  }

  forget(k?: string | number): void {
    if (k === undefined) this.seen.clear()
    else this.seen.delete(String(k))
  }
}
