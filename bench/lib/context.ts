// What every scenario gets: the flags, the time budget of one measured run, a log, and the
// figures earlier scenarios left for later ones (ceilings, group-commit insert sizes).
export interface Flags {
  quick: boolean
  tiny: boolean
  profile: boolean
  redisUrl?: string
  /** A ClickHouse server (no database path): cluster mode instead of chDB. */
  clickhouseUrl?: string
}

export interface Ctx extends Flags {
  warmupMs: number
  durationMs: number
  log(msg: string): void
  shared: {
    /** HTTP ceiling, readings/s, by readings per request */
    http: Map<number, number>
    /** storage ceiling, rows/s, by rows per INSERT */
    storage: Map<number, number>
    /** mean rows per group-commit INSERT seen in ingest runs (to measure the ceiling there) */
    insertSizes: number[]
    /** best end-to-end generic readings/s by batch */
    generic: Map<number, number>
    /** naive ingest ceiling, readings/s, by deployment profile (bench/scenarios/deployment.ts) */
    naive: Map<string, number>
  }
}

export function makeCtx(f: Flags, log: (m: string) => void): Ctx {
  const [warmupMs, durationMs] = f.tiny ? [1000, 3000] : f.quick ? [500, 2500] : [2000, 10_000]
  return {
    ...f,
    warmupMs,
    durationMs,
    log,
    shared: {
      http: new Map(),
      storage: new Map(),
      insertSizes: [],
      generic: new Map(),
      naive: new Map(),
    },
  }
}

/** Rate measured at the size nearest to `size` (log scale), if any. */
export function nearest(
  m: Map<number, number>,
  size: number,
): { size: number; rate: number } | undefined {
  let best: { size: number; rate: number } | undefined
  for (const [s, rate] of m)
    if (!best || Math.abs(Math.log(s / size)) < Math.abs(Math.log(best.size / size)))
      best = { size: s, rate }
  return best
}
