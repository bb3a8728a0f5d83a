// Decoder pool: Piscina workers, each with one WASM decoder instance, with
// meter affinity (each meter's telegrams always go to the same worker).
import { Piscina } from 'piscina'
import type { TelegramOutcome } from './telegram-outcome.js'
import { JOB_HEAD, readBatch, type FormatEvent } from './wire.js'
import { formatKey, type FormatBook, type FormatKey, type KnownFormat } from './format-book.js'
import type { TaughtFormat } from './worker.js'
import { compileLayout, type FrameLayout, type FrameOutcome } from './frame-layout.js'
import { affinityIndex } from './affinity.js'
import { decodeChannel } from './channel.js'

export type { TelegramOutcome } from './telegram-outcome.js'
export type { FrameLayout, FrameOutcome } from './frame-layout.js'

export interface TelegramJob {
  hex: string
  key: string | null
  /** The tenant: compact-frame formats are kept per scope (default 0). */
  scope?: number
}
export interface DecoderPoolOptions {
  workers: number
  /** Shares the compact-frame formats workers learn (format-book.ts); none: each worker's own. */
  formats?: FormatBook
}

/** Result buffers kept for reuse at most (each about a batch's results, ~1–2 MB for 500 plain telegrams). */
const MAX_SPARES = 8

const KEY_RE = /^[0-9a-fA-F]{32}$/
const DES_KEY_RE = /^[0-9a-fA-F]{16}$/

function workerFile(): string {
  const ts = import.meta.url.endsWith('.ts')
  return new URL(ts ? './worker.ts' : './worker.js', import.meta.url).href
}

/** Packs a batch into one transferable buffer (see worker.ts for the layout). */
export function packTelegrams(jobs: TelegramJob[]): ArrayBuffer {
  let total = 4 + jobs.length * JOB_HEAD
  for (const j of jobs) total += typeof j.hex === 'string' ? j.hex.length : 0 // replacements keep the length
  const ab = new ArrayBuffer(total)
  const b = Buffer.from(ab)
  b.writeUInt32LE(jobs.length, 0)
  let hp = 4
  let dp = 4 + jobs.length * JOB_HEAD
  for (const j of jobs) {
    let hex = typeof j.hex === 'string' ? j.hex : ''
    if (Buffer.byteLength(hex, 'utf8') !== hex.length) hex = hex.replace(/[^\x00-\x7f]/g, '?')
    b.writeUInt32LE(hex.length, hp)
    if (j.key === null || j.key === undefined) b[hp + 4] = 0
    else if (typeof j.key === 'string' && KEY_RE.test(j.key)) {
      b[hp + 4] = 1
      b.write(j.key, hp + 5, 16, 'hex')
    } else if (typeof j.key === 'string' && DES_KEY_RE.test(j.key)) {
      b[hp + 4] = 3 // 8-byte (DES) key in the first 8 key bytes
      b.write(j.key, hp + 5, 8, 'hex')
    } else b[hp + 4] = 2
    b.writeUInt32LE((j.scope ?? 0) >>> 0, hp + 21)
    hp += JOB_HEAD
    // latin1 keeps one byte per char; any non-hex char is caught by the decoder
    dp += b.write(hex, dp, hex.length, 'latin1')
  }
  return ab
}

/**
 * N single-thread Piscina instances ("shards"), one WASM decoder each. A
 * telegram goes to the shard picked by its meter's link-layer identity
 * (affinity.ts), so the compact-frame formats a worker learns from a meter's
 * full frame are there when that meter's compact frames come. A batch is split
 * per shard (one transferred buffer per sub-batch), the sub-batches run in
 * parallel and the results are put back in job order. If a worker dies, its
 * sub-batch (and so the batch) rejects; Piscina starts a new worker for that
 * shard (minThreads 1), which starts with an empty format table.
 */
export class DecoderPool {
  private readonly shards: Piscina[]
  private readonly pending: number[]
  private readonly book: FormatBook | null
  private next = 0
  /**
   * Result buffers done with, sent along with the next batches for their results. Each new
   * buffer is memory outside the V8 heap, and V8 answers its fast growth with young-generation
   * collections ("external memory pressure"): a batch of 500 plain telegrams has ~1.2 MB of
   * results.
   */
  private readonly spares: ArrayBuffer[] = []
  /** Result buffers handed out and not taken back yet: only these are used again. */
  private readonly issued = new WeakSet<ArrayBuffer>()

  constructor(opts: DecoderPoolOptions) {
    const n = Math.max(1, Math.floor(opts.workers) || 1)
    const filename = workerFile()
    // stricterFIFO: a task that finds the worker busy goes back to the head
    // of the queue (the default puts it at the tail), so each worker runs its
    // sub-batches in submission order: a full frame submitted before a compact
    // frame of the same meter is decoded first, even across concurrent batches
    this.shards = Array.from(
      { length: n },
      () =>
        new Piscina({
          filename,
          minThreads: 1,
          maxThreads: 1,
          idleTimeout: 60_000,
          stricterFIFO: true,
        }),
    )
    this.pending = new Array<number>(n).fill(0)
    this.book = opts.formats ?? null
  }

  private async runOn<T>(i: number, task: unknown, transferList?: ArrayBuffer[]): Promise<T> {
    this.pending[i]!++
    try {
      return (await this.shards[i]!.run(
        task,
        transferList ? { transferList: transferList as unknown as never } : undefined,
      )) as T
    } finally {
      this.pending[i]!--
    }
  }

  /** The least loaded shard, ties broken round-robin (for work without affinity). */
  private anyShard(): number {
    const n = this.shards.length
    const s = this.next++ % n
    let best = s
    for (let k = 1; k < n; k++) {
      const i = (s + k) % n
      if (this.pending[i]! < this.pending[best]!) best = i
    }
    return best
  }

  private async decodeOn(i: number, jobs: TelegramJob[], formats?: TaughtFormat[]) {
    const buf = packTelegrams(jobs)
    const out = this.spares.pop() ?? null
    const res = await this.runOn<Uint8Array>(
      i,
      { kind: 'telegrams', buf, formats, out },
      out ? [buf, out] : [buf],
    )
    this.issued.add(res.buffer as ArrayBuffer)
    return readBatch(res, jobs.length)
  }

  /**
   * Takes back the buffers of decoded payloads (the outcomes' `rawTsvBytes`) once nothing
   * reads them any more: their request is stored and answered. The workers write later
   * results into them, and every view of a buffer goes empty the moment it is sent, so this
   * is the caller's promise that none is kept. Only buffers this pool handed out are taken,
   * each once.
   */
  recycle(payloads: Iterable<unknown>): void {
    for (const p of payloads) {
      if (!(p instanceof Uint8Array)) continue
      const b = p.buffer as ArrayBuffer
      if (!this.issued.delete(b)) continue
      if (this.spares.length < MAX_SPARES) this.spares.push(b)
    }
  }

  /** Result buffers waiting to be used again (tests). */
  get spareBuffers(): number {
    return this.spares.length
  }

  /**
   * Decodes on shard i. With a format book, formats the worker learnt are kept in it, and
   * compact frames the worker could not read are decoded again with the book's formats.
   */
  private async runTelegrams(i: number, jobs: TelegramJob[]): Promise<TelegramOutcome[]> {
    const { outcomes, formats } = await this.decodeOn(i, jobs)
    if (!this.book || formats.length === 0) return outcomes
    const keyOf = (e: FormatEvent): FormatKey => ({
      scope: jobs[e.index]!.scope ?? 0,
      id: e.id,
      m: e.m,
      sig: e.sig,
    })
    const learnt: KnownFormat[] = []
    const missed: FormatEvent[] = []
    for (const e of formats) {
      if (e.format) learnt.push({ ...keyOf(e), format: e.format })
      else missed.push(e)
    }
    if (learnt.length) await this.book.keep(learnt)
    if (missed.length === 0) return outcomes
    const known = await this.book.find(missed.map(keyOf))
    const retry = missed.filter((e) => known.has(formatKey(keyOf(e))))
    if (retry.length === 0) return outcomes
    const taught = new Map<string, TaughtFormat>()
    for (const e of retry) {
      const k = keyOf(e)
      taught.set(formatKey(k), [k.scope, k.id, k.m, k.sig, known.get(formatKey(k))!])
    }
    const again = await this.decodeOn(
      i,
      retry.map((e) => jobs[e.index]!),
      [...taught.values()],
    )
    retry.forEach((e, k) => (outcomes[e.index] = again.outcomes[k]!))
    return outcomes
  }

  async decodeTelegrams(jobs: TelegramJob[]): Promise<TelegramOutcome[]> {
    if (!decodeChannel.hasSubscribers) return this.telegramsByShard(jobs)
    const e = { pool: this, kind: 'telegram' as const, count: jobs.length }
    try {
      const out = await this.telegramsByShard(jobs)
      decodeChannel.publish({ ...e, outcomes: out.map((o) => o.status) })
      return out
    } catch (err) {
      decodeChannel.publish({ ...e, outcomes: null })
      throw err
    }
  }

  private async telegramsByShard(jobs: TelegramJob[]): Promise<TelegramOutcome[]> {
    if (jobs.length === 0) return []
    const n = this.shards.length
    if (n === 1) return this.runTelegrams(0, jobs)
    const route = new Uint32Array(jobs.length)
    const counts = new Array<number>(n).fill(0)
    for (let j = 0; j < jobs.length; j++) {
      const i = affinityIndex(jobs[j]!.hex, n)
      route[j] = i
      counts[i]!++
    }
    const used = counts.filter((c) => c > 0).length
    if (used === 1) return this.runTelegrams(route[0]!, jobs)
    const parts: TelegramJob[][] = counts.map((c) => new Array<TelegramJob>(c))
    const fill = new Array<number>(n).fill(0)
    for (let j = 0; j < jobs.length; j++) {
      const i = route[j]!
      parts[i]![fill[i]!++] = jobs[j]!
    }
    const results = await Promise.all(
      parts.map((p, i) => (p.length ? this.runTelegrams(i, p) : Promise.resolve([]))),
    )
    const out = new Array<TelegramOutcome>(jobs.length)
    fill.fill(0)
    for (let j = 0; j < jobs.length; j++) {
      const i = route[j]!
      out[j] = results[i]![fill[i]!++]!
    }
    return out
  }

  async decodeFrames(layout: FrameLayout, frames: string[]): Promise<FrameOutcome[]> {
    if (frames.length === 0) return []
    const compiled = compileLayout(layout)
    const e = { pool: this, kind: 'frame' as const, count: frames.length }
    try {
      const res = await this.runOn<string>(this.anyShard(), {
        kind: 'frames',
        layout: compiled,
        frames,
      })
      const out = JSON.parse(res) as FrameOutcome[]
      if (decodeChannel.hasSubscribers)
        decodeChannel.publish({ ...e, outcomes: out.map((o) => (o.ok ? 'ok' : 'invalid')) })
      return out
    } catch (err) {
      if (decodeChannel.hasSubscribers) decodeChannel.publish({ ...e, outcomes: null })
      throw err
    }
  }

  /** Test hook: makes one worker exit mid-task (round-robin over the shards). The returned promise rejects. */
  crashOneWorkerForTest(): Promise<unknown> {
    return this.runOn(this.next++ % this.shards.length, { kind: 'crash' })
  }

  /** Worker threads running now (one per shard; briefly fewer while a crashed one restarts). */
  get threads(): number {
    let t = 0
    for (const s of this.shards) t += s.threads.length
    return t
  }

  async destroy(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.destroy()))
  }
}
