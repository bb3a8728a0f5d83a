// Requests in flight, so a stop can drain them: stop taking new ones, wait for the running
// ones, and answer those still running at the deadline 503 (never acknowledged: a retry is
// safe).
export class InFlight {
  private count = 0
  private draining = false
  private drained: (() => void) | null = null
  /** Answers an in-flight request 503 (the drain deadline passed). */
  private readonly cutOffs = new Set<() => void>()

  get size(): number {
    return this.count
  }

  get isDraining(): boolean {
    return this.draining
  }

  /** Counts a request until the returned `done` is called; `cutOff` answers it 503. */
  begin(cutOff: () => void): () => void {
    this.count++
    this.cutOffs.add(cutOff)
    return () => {
      this.cutOffs.delete(cutOff)
      if (--this.count === 0 && this.drained) this.drained()
    }
  }

  drain(timeoutMs: number): Promise<void> {
    this.draining = true
    if (this.count === 0) return Promise.resolve()
    return new Promise<void>((ok) => {
      const timer = setTimeout(() => {
        for (const cut of [...this.cutOffs]) cut()
        ok()
      }, timeoutMs)
      this.drained = () => {
        clearTimeout(timer)
        ok()
      }
    })
  }
}
