// Per-meter ordering across instances sharing Redis: a meter's turn runs under a lease,
// and every turn that writes leaves a fresh random stamp. An actor whose last stamp is not
// the current one (another instance wrote, or Redis lost its keys) reloads from ClickHouse.
import crypto from 'node:crypto'
import type { MeterLocks } from '../actors/meter-actor.js'
import { apiError } from '../errors.js'
import type { Coord } from './coord.js'

export class CoordMeterLocks implements MeterLocks {
  private readonly owner = crypto.randomUUID()

  constructor(
    private readonly coord: Coord,
    private readonly ttlMs = 30_000,
    private readonly waitMs = 30_000,
  ) {}

  async withLock<T>(
    meterId: number,
    seen: number | null,
    fn: (changed: boolean) => Promise<T>,
  ): Promise<{ result: T; seen: number | null }> {
    const name = `meter:${meterId}`
    const started = Date.now()
    for (
      let delay = 2;
      !(await this.coord.lease(name, this.owner, this.ttlMs));
      delay = Math.min(delay * 2, 50)
    ) {
      if (Date.now() - started > this.waitMs)
        throw apiError('Unavailable', `Meter ${meterId} is busy on another instance; retry.`)
      await new Promise((r) => setTimeout(r, delay))
    }
    try {
      const stamp = await this.coord.get(`mstamp:${meterId}`)
      const changed = stamp === null || seen === null || Number(stamp) !== seen
      const result = await fn(changed)
      const next = crypto.randomInt(1, 2 ** 47)
      await this.coord.set(`mstamp:${meterId}`, String(next))
      return { result, seen: next }
    } finally {
      await this.coord.release(name, this.owner).catch(() => {})
    }
  }
}
