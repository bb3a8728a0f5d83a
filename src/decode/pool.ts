// Decoder pool: Piscina workers, each with one WASM decoder instance.
import { Piscina } from 'piscina'
import type { TelegramOutcome } from './telegram.js'
import { readResults } from './wire.js'
import { compileLayout, type FrameLayout, type FrameOutcome } from './frame-layout.js'

export type { TelegramOutcome } from './telegram.js'
export type { FrameLayout, FrameOutcome } from './frame-layout.js'

export interface TelegramJob {
  hex: string
  key: string | null
}
export interface DecoderPoolOptions {
  workers: number
}

const KEY_RE = /^[0-9a-fA-F]{32}$/

function workerFile(): string {
  const ts = import.meta.url.endsWith('.ts')
  return new URL(ts ? './worker.ts' : './worker.js', import.meta.url).href
}

/** Packs a batch into one transferable buffer (see worker.ts for the layout). */
export function packTelegrams(jobs: TelegramJob[]): ArrayBuffer {
  let total = 4 + jobs.length * 21
  for (const j of jobs) total += typeof j.hex === 'string' ? j.hex.length : 0 // replacements keep the length
  const ab = new ArrayBuffer(total)
  const b = Buffer.from(ab)
  b.writeUInt32LE(jobs.length, 0)
  let hp = 4
  let dp = 4 + jobs.length * 21
  for (const j of jobs) {
    let hex = typeof j.hex === 'string' ? j.hex : ''
    if (Buffer.byteLength(hex, 'utf8') !== hex.length) hex = hex.replace(/[^\x00-\x7f]/g, '?')
    b.writeUInt32LE(hex.length, hp)
    if (j.key === null || j.key === undefined) b[hp + 4] = 0
    else if (typeof j.key === 'string' && KEY_RE.test(j.key)) {
      b[hp + 4] = 1
      b.write(j.key, hp + 5, 16, 'hex')
    } else b[hp + 4] = 2
    hp += 21
    // latin1 keeps one byte per char; any non-hex char is caught by the decoder
    dp += b.write(hex, dp, hex.length, 'latin1')
  }
  return ab
}

export class DecoderPool {
  private readonly pool: Piscina

  constructor(opts: DecoderPoolOptions) {
    const n = Math.max(1, Math.floor(opts.workers))
    this.pool = new Piscina({
      filename: workerFile(),
      minThreads: n,
      maxThreads: n,
      idleTimeout: 60_000,
    })
  }

  async decodeTelegrams(jobs: TelegramJob[]): Promise<TelegramOutcome[]> {
    if (jobs.length === 0) return []
    const buf = packTelegrams(jobs)
    const res = (await this.pool.run(
      { kind: 'telegrams', buf },
      { transferList: [buf] as unknown as never },
    )) as ArrayBuffer
    return readResults(res, jobs.length)
  }

  async decodeFrames(layout: FrameLayout, frames: string[]): Promise<FrameOutcome[]> {
    if (frames.length === 0) return []
    const compiled = compileLayout(layout)
    const res = (await this.pool.run({ kind: 'frames', layout: compiled, frames })) as string
    return JSON.parse(res) as FrameOutcome[]
  }

  /** Test hook: makes one worker exit mid-task. The returned promise rejects. */
  crashOneWorkerForTest(): Promise<unknown> {
    return this.pool.run({ kind: 'crash' })
  }

  get threads(): number {
    return this.pool.threads.length
  }

  async destroy(): Promise<void> {
    await this.pool.destroy()
  }
}
