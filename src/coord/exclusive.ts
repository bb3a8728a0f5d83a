// Work that one holder at a time may do, across instances: a coordination lease taken by
// polling (bounded), released after the work. `exclusive` adds an in-process chain per key
// in front, so one process's callers queue in order instead of all polling the lease.
import crypto from 'node:crypto'
import type { Coord } from './coord.js'

export interface LeaseWait {
  /** Lease TTL: how long a crashed holder blocks the others. */
  ttlMs: number
  /** Between attempts while someone else holds it. */
  pollMs: number
  /** Attempts before giving up with `timeout()`. */
  attempts: number
  timeout: () => Error
}

/** Runs `fn` holding the lease `name`, waiting for it as `wait` says. */
export async function withLease<T>(
  coord: Coord,
  name: string,
  wait: LeaseWait,
  fn: () => Promise<T>,
): Promise<T> {
  const owner = `${process.pid}:${crypto.randomUUID()}`
  for (let i = 0; !(await coord.lease(name, owner, wait.ttlMs)); i++) {
    if (i >= wait.attempts) throw wait.timeout()
    await new Promise((r) => setTimeout(r, wait.pollMs))
  }
  try {
    return await fn()
  } finally {
    await coord.release(name, owner).catch(() => {})
  }
}

/** Serialises work per key: in this process by a promise chain, across instances by a lease. */
export class Exclusive {
  private readonly chains = new Map<string, Promise<unknown>>()

  constructor(
    private readonly coord: Coord,
    private readonly wait: LeaseWait,
  ) {}

  async run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(name) ?? Promise.resolve()
    const run = prev.catch(() => {}).then(() => withLease(this.coord, name, this.wait, fn))
    this.chains.set(name, run)
    try {
      return await run
    } finally {
      if (this.chains.get(name) === run) this.chains.delete(name)
    }
  }
}
