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

/**
 * utime + stime of the main thread of `pid` alone (its JavaScript, GC and whatever runs
 * on the event loop; not chDB's or the workers' threads), in milliseconds, or NaN.
 */
export function mainThreadCpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/task/${pid}/stat`)
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
