// Piscina worker: one WASM decoder instance per thread; a batch arrives as one
// transferred ArrayBuffer and leaves as one (see wire.ts; the raw payload JSON is built here).
import fs from 'node:fs'
import { isMainThread } from 'node:worker_threads'
import { loadWasmCore } from './core.js'
import { Piscina } from 'piscina'
import { runTelegram } from './telegram.js'
import { RC, E, S } from './layout.js'
import { JOB_HEAD, ResultWriter, REASON_BAD_KEY, REASON_INTERNAL } from './wire.js'
import { decodeFrameSync } from './frames.js'
import type { CompiledLayout } from './frame-layout.js'

// The thread's name in top, perf and /proc (Linux only; elsewhere the write fails and
// nothing changes): operators and the bench (bench/lib/proc.ts) tell decoder CPU from the
// rest of the process by it. Not on a main thread that imports this file (tests).
if (!isMainThread)
  try {
    fs.writeFileSync('/proc/thread-self/comm', 'mf-decoder')
  } catch {
    // not Linux, or /proc not mounted
  }

const core = loadWasmCore()
const writer = new ResultWriter()

/** A compact-frame format given to a worker: [scope, id, m, sig, entry hex] (wire.ts). */
export type TaughtFormat = [number, number, number, number, string]

export type WorkerTask =
  | {
      kind: 'telegrams'
      buf: ArrayBuffer
      formats?: TaughtFormat[]
      /** A buffer of an earlier result, for this one (wire.ts `ResultWriter.take`). */
      out?: ArrayBuffer | null
    }
  | { kind: 'frames'; layout: CompiledLayout; frames: string[] }
  | { kind: 'crash' }

/**
 * Batch buffer in: u32 count | count x (u32 hex length, u8 key state 0 none / 1 key / 2 bad key / 3 DES key (8 bytes),
 * 16 key bytes, u32 scope) | hex ASCII. Formats given with the batch are taken in first.
 * Result out: see wire.ts; written into `out` where it fits.
 */
export function handleTelegrams(
  buf: ArrayBuffer,
  formats: TaughtFormat[] = [],
  out: ArrayBuffer | null = null,
): Uint8Array {
  for (const [scope, id, m, sig, hex] of formats) {
    core.fmtScope(scope)
    const n = core.FMT.length
    const len = hex.length >> 1
    if (len > n) continue
    core.FMT.set(Buffer.from(hex, 'hex'))
    core.fmtPut(id, m, sig, len)
  }
  const dv = new DataView(buf)
  const bytes = new Uint8Array(buf)
  const count = dv.getUint32(0, true)
  let hp = 4
  let dp = 4 + count * JOB_HEAD
  const key = new Uint8Array(16)
  writer.reset()
  for (let i = 0; i < count; i++) {
    const len = dv.getUint32(hp, true)
    const ks = bytes[hp + 4]!
    // Most telegrams are plain: no key to copy (a subarray and a copy per telegram).
    if (ks === 1 || ks === 3) key.set(bytes.subarray(hp + 5, hp + 21))
    core.fmtScope(dv.getUint32(hp + 21, true) | 0)
    hp += JOB_HEAD
    if (ks === 2) {
      writer.simple(RC.UNDECODABLE, REASON_BAD_KEY)
      dp += len
      continue
    }
    if (len > core.IN.length) {
      writer.simple(RC.INVALID, E.TOO_LONG)
      dp += len
      continue
    }
    const hex = bytes.subarray(dp, dp + len)
    core.IN.set(hex)
    dp += len
    let code: number
    try {
      code = runTelegram(core, len, ks === 1 ? key : ks === 3 ? key.subarray(0, 8) : null)
    } catch {
      // the decoder never traps by design; keep the batch alive if it ever does
      writer.simple(RC.UNDECODABLE, REASON_INTERNAL)
      continue
    }
    noteFormat(i)
    if (code === RC.OK) writer.ok(core, hex)
    else if (code === RC.NEED_CRYPTO) writer.simple(RC.UNDECODABLE, E.UNSUPPORTED_SEC)
    else writer.simple(code, code === RC.UNCONFIGURED ? E.ENCRYPTED_NO_KEY : core.CTRL[41]!)
  }
  return writer.take(out)
}

/** Reports a format the telegram just decoded taught the table, or one it lacked. */
function noteFormat(index: number): void {
  const { CTRL } = core
  const learnt = CTRL[S.FMT_NEW]!
  if (!learnt && !CTRL[S.FMT_MISS]) return
  const base = { index, id: CTRL[S.ID]!, m: CTRL[S.ID_M]!, sig: CTRL[S.FMT_SIG]! }
  if (!learnt) return writer.format({ ...base, format: null })
  const n = core.fmtRead(learnt - 1)
  writer.format({ ...base, format: Buffer.from(core.FMT.subarray(0, n)).toString('hex') })
}

export default function handler(task: WorkerTask): Uint8Array | string {
  if (task.kind === 'telegrams')
    return Piscina.move(
      handleTelegrams(task.buf, task.formats, task.out ?? null),
    ) as unknown as Uint8Array
  if (task.kind === 'frames')
    return JSON.stringify(task.frames.map((f) => decodeFrameSync(core, task.layout, f)))
  if (task.kind === 'crash') process.exit(70) // test hook: kills this worker thread
  throw new Error('unknown task')
}
