// Time is injected so tests can drive the scheduler, retries, alert evaluation and the
// event engine's polling without sleeping.
export interface Clock {
  now(): number
  /**
   * Calls `fn` every `ms` of this clock's time until the returned function is called. Never
   * keeps the process alive. Ticks missed while the process was busy collapse into one.
   */
  every(ms: number, fn: () => void): () => void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  every(ms, fn) {
    const timer = setInterval(fn, ms)
    timer.unref()
    return () => clearInterval(timer)
  },
}

interface ManualTimer {
  ms: number
  fn: () => void
  next: number
}

/** A clock tests move by hand; its timers fire, in time order, as it moves. */
export class ManualClock implements Clock {
  private readonly timers = new Set<ManualTimer>()

  constructor(private t: number = Date.now()) {}

  now(): number {
    return this.t
  }

  every(ms: number, fn: () => void): () => void {
    const timer: ManualTimer = { ms: Math.max(1, ms), fn, next: this.t + Math.max(1, ms) }
    this.timers.add(timer)
    return () => this.timers.delete(timer)
  }

  advance(ms: number): void {
    this.set(this.t + ms)
  }

  set(t: number): void {
    this.t = t
    // Once per timer that came due, however far the clock moved (as a busy process would).
    const due = [...this.timers].filter((x) => x.next <= t).sort((a, b) => a.next - b.next)
    for (const x of due) {
      x.next = t + x.ms
      if (this.timers.has(x)) x.fn()
    }
  }
}
