// Parent side of the load generator: forks bench/lib/loadgen-child.ts once per scenario and
// runs loads in it; samples the server's CPU exactly at the start and end of the
// measurement window the child announces.
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { LoadConfig, LoadResult } from './loadgen-child.js'
import type { ThreadCpu } from './proc.js'

export type { LoadConfig, LoadResult }

export interface Measured extends LoadResult {
  /** server CPU (all threads) during the window, ms */
  serverCpuMs: number
  /** server CPU per 1,000 stored readings, ms */
  cpuMsPer1k: number
  /** server CPU share of one core during the window */
  serverCores: number
  /** CPU of the server's main thread (JavaScript, GC) per 1,000 stored readings, ms */
  mainMsPer1k?: number
  /**
   * The server's CPU per 1,000 stored readings by thread kind, ms: main thread, decoder
   * workers, chDB's merges, and the rest (chDB's query threads, libuv's pool, GC helpers).
   */
  threadsMsPer1k?: { main: number; decoders: number; merges: number; rest: number }
  /** Share of the window the server's main thread waited for a core (`ThreadCpu.mainWaitMs`). */
  mainWaitShare?: number
}

export class LoadGen {
  private child: ChildProcess
  private ready: Promise<void>

  constructor() {
    this.child = fork(fileURLToPath(new URL('./loadgen-child.ts', import.meta.url)), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    this.ready = new Promise((resolve, reject) => {
      this.child.once('message', () => resolve())
      this.child.once('exit', (c) => reject(new Error(`load generator exited ${c}`)))
    })
    this.ready.catch(() => {}) // surfaced by run(); closing early is not an error
  }

  async run(
    cfg: LoadConfig,
    serverCpu: () => number,
    threadCpu?: () => ThreadCpu,
  ): Promise<Measured> {
    await this.ready
    return new Promise((resolve, reject) => {
      let c0 = NaN
      let c1 = NaN
      let t0: ThreadCpu | undefined
      let t1: ThreadCpu | undefined
      const onMessage = (m: { type: string; result?: LoadResult; message?: string }) => {
        if (m.type === 'measure-start') {
          c0 = serverCpu()
          t0 = threadCpu?.()
        } else if (m.type === 'measure-end') {
          c1 = serverCpu()
          t1 = threadCpu?.()
        } else if (m.type === 'error') {
          this.child.off('message', onMessage)
          reject(new Error(m.message))
        } else if (m.type === 'result') {
          this.child.off('message', onMessage)
          const r = m.result!
          const serverCpuMs = c1 - c0
          const per = r.accepted > 0 ? r.accepted : r.readingsSent
          resolve({
            ...r,
            serverCpuMs,
            cpuMsPer1k: per > 0 ? (serverCpuMs / per) * 1000 : NaN,
            serverCores: serverCpuMs / (r.windowS * 1000),
            ...(t0 && t1 && per > 0 ? perThousand(t0, t1, per) : {}),
            ...(t0 && t1
              ? { mainWaitShare: (t1.mainWaitMs - t0.mainWaitMs) / (r.windowS * 1000) }
              : {}),
          })
        }
      }
      this.child.on('message', onMessage)
      this.child.send({ type: 'run', cfg })
    })
  }

  close(): void {
    this.child.kill()
  }
}

function perThousand(
  t0: ThreadCpu,
  t1: ThreadCpu,
  per: number,
): Pick<Measured, 'mainMsPer1k' | 'threadsMsPer1k'> {
  const k = (ms: number) => (ms / per) * 1000
  const main = k(t1.main - t0.main)
  const decoders = k(t1.decoders - t0.decoders)
  const merges = k(t1.merges - t0.merges)
  const rest = k(t1.total - t0.total) - main - decoders - merges
  return { mainMsPer1k: main, threadsMsPer1k: { main, decoders, merges, rest } }
}
