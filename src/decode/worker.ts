// Piscina worker: one WASM decoder instance per thread; a batch arrives as one
// transferred ArrayBuffer and leaves as one (see wire.ts; the raw payload JSON is built here).
import { loadWasmCore } from './core.js'
import { Piscina } from 'piscina'
import { runTelegram } from './telegram.js'
import { RC, E } from './layout.js'
import { ResultWriter, REASON_BAD_KEY, REASON_INTERNAL } from './wire.js'
import { decodeFrameSync } from './frames.js'
import type { CompiledLayout } from './frame-layout.js'

const core = loadWasmCore()
const writer = new ResultWriter()

export type WorkerTask =
  | { kind: 'telegrams'; buf: ArrayBuffer }
  | { kind: 'frames'; layout: CompiledLayout; frames: string[] }
  | { kind: 'crash' }

/**
 * Batch buffer in: u32 count | count x (u32 hex length, u8 key state 0 none / 1 key / 2 bad key, 16 key bytes) | hex ASCII.
 * Result out: see wire.ts.
 */
export function handleTelegrams(buf: ArrayBuffer): ArrayBuffer {
  const dv = new DataView(buf)
  const bytes = new Uint8Array(buf)
  const count = dv.getUint32(0, true)
  let hp = 4
  let dp = 4 + count * 21
  const key = new Uint8Array(16)
  writer.reset()
  for (let i = 0; i < count; i++) {
    const len = dv.getUint32(hp, true)
    const ks = bytes[hp + 4]!
    key.set(bytes.subarray(hp + 5, hp + 21))
    hp += 21
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
      code = runTelegram(core, len, ks === 1 ? key : null)
    } catch {
      // the decoder never traps by design; keep the batch alive if it ever does
      writer.simple(RC.UNDECODABLE, REASON_INTERNAL)
      continue
    }
    if (code === RC.OK) writer.ok(core, hex)
    else if (code === RC.NEED_CRYPTO) writer.simple(RC.UNDECODABLE, E.UNSUPPORTED_SEC)
    else writer.simple(code, code === RC.UNCONFIGURED ? E.ENCRYPTED_NO_KEY : core.CTRL[41]!)
  }
  return writer.take()
}

export default function handler(task: WorkerTask): ArrayBuffer | string {
  if (task.kind === 'telegrams')
    return Piscina.move(handleTelegrams(task.buf)) as unknown as ArrayBuffer
  if (task.kind === 'frames')
    return JSON.stringify(task.frames.map((f) => decodeFrameSync(core, task.layout, f)))
  if (task.kind === 'crash') process.exit(70) // test hook: kills this worker thread
  throw new Error('unknown task')
}
