// A mailbox is a queue drained by one loop: work handed to it runs strictly one after the
// other, in arrival order. The handler owns its errors; a failed task does not stop the box.
export class Mailbox {
  private tail: Promise<unknown> = Promise.resolve()
  private pending = 0

  /** Number of tasks queued or running (mailbox depth). */
  get depth(): number {
    return this.pending
  }

  post<T>(task: () => Promise<T>): Promise<T> {
    this.pending++
    const run = this.tail.then(task, task)
    this.tail = run.then(
      () => this.pending--,
      () => this.pending--,
    )
    return run
  }
}
