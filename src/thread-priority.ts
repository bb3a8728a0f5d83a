// The event loop's thread ahead of the engine's. Every request passes through the main thread,
// one at a time; chDB's query and merge threads and the decoder workers work beside it. On a
// busy machine they took the cores while the main thread stood ready (`main wait %`,
// bench/lib/proc.ts; 2 cores, with the load generator). With those threads at nice 10 it
// waited 10.9 % of the gateway 500 row's window against 15.4 %, 23 % of the telegram
// gateway rows' against 35-39 %, and those rows ran 8-10 % faster; the half-load p99 did not
// clearly move (docs/benchmarks.md, "Built"). Raising a thread's nice value needs no
// privilege; lowering the main thread's would (CAP_SYS_NICE), so the others yield instead.
//
// Node's own threads are left as they are: V8's GC helpers and libuv's pool carry the main
// thread's name, the engine's and the decoder workers' threads their own. At nice 10 too, the
// GC helpers fell behind and the main thread did more of the collecting itself (~10 % more
// main-thread CPU per reading in the same bench rows).
//
// Linux only: a thread is addressed by its id under /proc/self/task, and setpriority() with
// a thread id sets that thread alone. Threads start later too (chDB's pools grow under load,
// Piscina replaces a dead worker), so the threads are looked at again every second.
import fs from 'node:fs'
import os from 'node:os'

const RESCAN_MS = 1_000
const TASKS = '/proc/self/task'

const nameOf = (tid: number | string) => fs.readFileSync(`${TASKS}/${tid}/comm`, 'latin1')

/**
 * Gives every named thread of this process (one not named as the main thread) the nice value
 * `nice`, now and every second after; returns what stops it. A thread already at `nice` or
 * above is left as it is, and so is one set ahead of the main thread (chDB runs its memory
 * tracker at -20 where it may). Does nothing where `nice` is 0 or there is no /proc/self/task.
 */
export function yieldEngineThreads(nice: number): () => void {
  if (nice <= 0 || !fs.existsSync(TASKS)) return () => {}
  const main = process.pid
  const nodeName = nameOf(main)
  const scan = () => {
    const floor = os.getPriority(main)
    let tids: string[]
    try {
      tids = fs.readdirSync(TASKS)
    } catch {
      return
    }
    for (const t of tids) {
      try {
        const tid = Number(t)
        const p = os.getPriority(tid)
        if (p >= floor && p < nice && nameOf(t) !== nodeName) os.setPriority(tid, nice)
      } catch {
        // ended between the listing and the call
      }
    }
  }
  scan()
  const timer = setInterval(scan, RESCAN_MS)
  timer.unref()
  return () => clearInterval(timer)
}
