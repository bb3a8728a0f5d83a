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
  private readonly seen = new Map<string, { gen: string; checkedAt: number; ahead?: Set<number> }>()

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

  /**
   * True when the entry loaded for `k` is older than the shared generation. `settle`, where
   * a cache applies other instances' changes from their messages: awaited when the entry is
   * behind, for the changes whose messages are being applied; stale only if still behind.
   */
  async stale(k: string | number, settle?: () => Promise<unknown>): Promise<boolean> {
    const s = this.seen.get(String(k))
    if (!s) return true
    const now = this.now()
    if (now - s.checkedAt < this.checkEveryMs) return false
    s.checkedAt = now
    const gen = await this.read(k)
    if (gen === null || gen === s.gen) return false
    // Lower than ours: the shared counter was lost (Redis restarted empty).
    if (!settle || !(Number(gen) > Number(s.gen))) return true
    await settle()
    return !(this.seenGen(k) >= Number(gen))
  }

  /**
   * After a change made here: bumps the shared generation and returns it (null when the
   * coordination store could not be reached). When nobody else changed `k` since our load,
   * our own (already updated) entry stays current.
   */
  async bump(k: string | number): Promise<number | null> {
    const n = await this.coord.incr(this.key(k)).catch(() => null)
    if (n !== null) this.known(k, n)
    return n
  }

  /** The generation the entry for `k` is known current at (NaN: none, or not a number). */
  seenGen(k: string | number): number {
    const s = this.seen.get(String(k))
    return s ? Number(s.gen || 0) : NaN
  }

  /**
   * The entry for `k` now holds the change that made generation `gen` (made here, or another
   * instance's applied from its message). It is current at `gen` once every generation
   * before it is held too; changes known out of order wait for the ones between.
   */
  known(k: string | number, gen: number): void {
    const s = this.seen.get(String(k))
    if (!s) return
    let at = Number(s.gen || 0)
    if (!(gen > at)) return
    const ahead = (s.ahead ??= new Set())
    ahead.add(gen)
    while (ahead.delete(at + 1)) at++
    s.gen = String(at)
    if (!ahead.size) delete s.ahead
  }

  forget(k?: string | number): void {
    if (k === undefined) this.seen.clear()
    else this.seen.delete(String(k))
  }
}
