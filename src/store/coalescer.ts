// Batching by tick for the store's per-meter look-ups (HistoryLoader): the turns of one
// request start together, so what their meters ask in that tick reaches the store as one
// query per workspace. Generic: it knows neither the store nor what is asked.

/**
 * Merges the calls made in one tick into one `fetch` per workspace; each caller gets its
 * own part of the answer.
 */
export class Coalescer<Req, Res> {
  private queue = new Map<
    number,
    { reqs: Req[]; done: ((r: Res) => void)[]; fail: ((e: unknown) => void)[] }
  >()
  private scheduled = false

  constructor(private readonly fetch: (ws: number, reqs: Req[]) => Promise<Res[]>) {}

  ask(ws: number, req: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      let q = this.queue.get(ws)
      if (!q) this.queue.set(ws, (q = { reqs: [], done: [], fail: [] }))
      q.reqs.push(req)
      q.done.push(resolve)
      q.fail.push(reject)
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  private flush(): void {
    this.scheduled = false
    const batches = [...this.queue]
    this.queue.clear()
    for (const [ws, b] of batches)
      this.fetch(ws, b.reqs).then(
        (res) => b.done.forEach((d, i) => d(res[i]!)),
        (err) => b.fail.forEach((f) => f(err)),
      )
  }
}
