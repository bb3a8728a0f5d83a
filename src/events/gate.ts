// A counting gate: at most `limit` runs at once, the rest wait in arrival order. The limit
// may change while runs are in flight (the delivery engine adapts it per target).
export class Gate {
  private active = 0
  private readonly waiting: (() => void)[] = []

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
    for (let free = this.limit - this.active; free > 0 && this.waiting.length; free--)
      this.waiting.shift()!()
  }
}
