// A read-through cache of rows every instance may change: an entry per key, dropped here and,
// through the coordination channel named after the cache, on every other instance when any
// of them changes it. A lost message leaves an entry stale for at most CACHE_CHECK_MS
// (generations.ts).
import type { Coord } from './coord.js'
import { Generations } from './generations.js'

export class SharedCache<V> {
  private readonly entries = new Map<string, Promise<V>>()
  private readonly generations: Generations

  constructor(
    private readonly coord: Coord,
    private readonly name: string,
    private readonly load: (key: string) => Promise<V>,
  ) {
    this.generations = new Generations(coord, name)
  }

  /** Subscribes to the changes other instances announce. */
  async listen(): Promise<void> {
    await this.coord.subscribe(`cache:${this.name}`, (key) => this.entries.delete(key))
  }

  async get(key: string | number): Promise<V> {
    const k = String(key)
    if (this.entries.has(k) && (await this.generations.stale(k))) this.entries.delete(k)
    let p = this.entries.get(k)
    if (!p) {
      p = this.generations.loading(k).then(() => this.load(k))
      this.entries.set(k, p)
      p.catch(() => this.entries.delete(k))
    }
    return p
  }

  /** After a change of `key` is stored: every instance reads it again. */
  async changed(key: string | number): Promise<void> {
    const k = String(key)
    this.entries.delete(k)
    await this.generations.bump(k)
    await this.coord.publish(`cache:${this.name}`, k).catch(() => {})
  }
}
