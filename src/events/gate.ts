// A counting gate: at most `limit` runs at once, the rest wait in arrival order. The limit
// may change while runs are in flight (the delivery engine adapts it per target).
export class Gate {
  private active = 0
  /**
   * Waiting runs from `head` on. An index, not `shift()`: a backlog of 20,000 attempts
   * waiting on one target made every release move the whole array (a visible share of
   * the delivery engine's time in a provisioning profile).
   */
  private waiting: (() => void)[] = []
  private head = 0

  constructor(private limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    while (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r))
    this.active++
    try {
      return await fn()
    } finally {
      this.active--
      this.release()
    }
  }

  get current(): number {
    return this.limit
  }

  /** A new limit; a raised one lets waiting runs go now. */
  setLimit(limit: number): void {
    this.limit = limit
    this.release()
  }

  private release(): void {
    for (let free = this.limit - this.active; free > 0 && this.head < this.waiting.length; free--)
      this.waiting[this.head++]!()
    if (this.head === this.waiting.length) {
      this.waiting = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head)
      this.head = 0
    }
  }
}
