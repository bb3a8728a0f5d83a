// Process figures read from /proc (Linux): CPU time of a whole process (every thread,
// so chDB's threads and the Piscina decoder workers count) and its peak resident set.
import fs from 'node:fs'
import { execFileSync } from 'node:child_process'

let ticksPerSecond = 100
try {
  ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
} catch {
  // keep the Linux default
}

/** utime + stime of `pid` in milliseconds, or NaN when /proc is not readable. */
export function cpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`)
}

/** Server CPU split by who spent it, in ms (see `threadCpuMs`). */
export interface ThreadCpu {
  /** the main thread: JavaScript, GC, the event loop */
  main: number
  /** the decoder workers (threads named `mf-decoder`, src/decode/worker.ts) */
  decoders: number
  /** chDB's background merges (`MergeMutate` threads) */
  merges: number
  /**
   * How long the main thread was ready to run but waited for a core (the run-queue delay of
   * /proc/PID/task/PID/schedstat): where the server's threads, the load generator and other
   * work want more than the cores there are, a request's latency grows by it, whatever our
   * code costs. NaN where the kernel keeps no schedstat.
   */
  mainWaitMs: number
  /** the whole process, threads that have exited included */
  total: number
}

/**
 * CPU of `pid` by thread kind. chDB starts and ends query threads as it goes, and an exited
 * thread leaves no /proc entry, so the rest (`total` minus the named kinds: chDB's query
 * threads, libuv's pool that runs them, V8's GC helpers) is only known as a difference.
 */
export function threadCpuMs(pid: number): ThreadCpu {
  const out: ThreadCpu = {
    main: NaN,
    decoders: 0,
    merges: 0,
    mainWaitMs: runQueueWaitMs(pid),
    total: cpuMs(pid),
  }
  let tids: string[]
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`)
  } catch {
    return { main: NaN, decoders: NaN, merges: NaN, mainWaitMs: NaN, total: NaN }
  }
  for (const tid of tids) {
    const ms = statCpuMs(`/proc/${pid}/task/${tid}/stat`)
    if (!Number.isFinite(ms)) continue // ended between the listing and the read
    if (Number(tid) === pid) {
      out.main = ms
      continue
    }
    let comm = ''
    try {
      comm = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'latin1')
    } catch {
      continue
    }
    if (comm.startsWith('mf-decoder')) out.decoders += ms
    else if (comm.startsWith('MergeMutate')) out.merges += ms
  }
  return out
}

/** The run-queue wait of `pid`'s main thread so far, ms (schedstat's second field, ns). */
function runQueueWaitMs(pid: number): number {
  try {
    return (
      Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'latin1').split(' ')[1]) / 1e6
    )
  } catch {
    return NaN
  }
}

function statCpuMs(file: string): number {
  try {
    const stat = fs.readFileSync(file, 'latin1')
    // "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // After comm: index 0 is state; utime and stime are fields 14 and 15 of the full line.
    return ((Number(f[11]) + Number(f[12])) * 1000) / ticksPerSecond
  } catch {
    return NaN
  }
}

/** Peak resident set (VmHWM) of `pid` in MiB, or NaN. */
export function peakRssMiB(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'))
    return m ? Number(m[1]) / 1024 : NaN
  } catch {
    return NaN
  }
}

export function cpuModel(): string {
  try {
    const m = /model name\s*:\s*(.+)/.exec(fs.readFileSync('/proc/cpuinfo', 'latin1'))
    return m ? m[1]!.trim() : 'unknown'
  } catch {
    return 'unknown'
  }
}
