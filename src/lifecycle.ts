// Start and stop order of the running parts. Parts start in the order they were added and
// stop in reverse, so a part stops before what it depends on: the stream before the meter
// actors it feeds, the actors before the decoder, everything before the event engine that
// takes what they emit while stopping.
export interface Part {
  name: string
  start?(): Promise<void> | void
  stop?(): Promise<void> | void
}

export class Lifecycle {
  private readonly parts: Part[] = []

  add(part: Part): void {
    this.parts.push(part)
  }

  async start(): Promise<void> {
    for (const p of this.parts) await p.start?.()
  }

  /** Stops every part, also past one that fails (the first failure is thrown at the end). */
  async stop(): Promise<void> {
    let failure: unknown = null
    for (const p of [...this.parts].reverse())
      await Promise.resolve()
        .then(() => p.stop?.())
        .catch((err) => (failure ??= err))
    if (failure) throw failure
  }
}
