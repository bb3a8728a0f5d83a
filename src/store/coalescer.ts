// Batching by tick for the store's per-meter look-ups (HistoryLoader): the turns of one
// request start together, so what their meters ask in that tick reaches the store as one
// query per workspace. Generic: it knows neither the store nor what is asked.

/**
 * Merges the calls made in one tick into one `fetch` per workspace; each caller gets its
 * own part of the answer. With `serial`, a workspace has one fetch at a time: the calls
 * made while it runs go into one fetch when it ends. For calls that come one request each
 * (an admin call per meter), where a tick holds few of them and the engine runs one query
 * at a time anyway: they queue behind the running query either way, and so share the next.
 */
export class Coalescer<Req, Res> {
  private queue = new Map<
    number,
    { reqs: Req[]; done: ((r: Res) => void)[]; fail: ((e: unknown) => void)[] }
  >()
  private scheduled = false
  /** Workspaces with a fetch running (`serial` only). */
  private readonly running = new Set<number>()

  constructor(
    private readonly fetch: (ws: number, reqs: Req[]) => Promise<Res[]>,
    private readonly serial = false,
  ) {}

  ask(ws: number, req: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      let q = this.queue.get(ws)
      if (!q) this.queue.set(ws, (q = { reqs: [], done: [], fail: [] }))
      q.reqs.push(req)
      q.done.push(resolve)
      q.fail.push(reject)
      this.schedule()
    })
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => this.flush())
  }

  private flush(): void {
    this.scheduled = false
    const batches = [...this.queue]
    for (const [ws, b] of batches) {
      // Stays queued, gathering more, until the running fetch ends (`ended`).
      if (this.running.has(ws)) continue
      this.queue.delete(ws)
      const p = this.fetch(ws, b.reqs)
      p.then(
        (res) => b.done.forEach((d, i) => d(res[i]!)),
        (err) => b.fail.forEach((f) => f(err)),
      )
      if (!this.serial) continue
      this.running.add(ws)
      const ended = () => {
        this.running.delete(ws)
        if (this.queue.has(ws)) this.schedule()
      }
      p.then(ended, ended)
    }
  }
}
