// Piscina worker: one WASM decoder instance per thread; a batch arrives as one
// transferred ArrayBuffer and leaves as one JSON string.
import { loadWasmCore } from './core.js';
import { runTelegram, outcomeOf } from './telegram.js';
import { RC, E, REASONS } from './layout.js';
import { decodeFrameSync } from './frames.js';
import type { CompiledLayout } from './frame-layout.js';

const core = loadWasmCore();

export type WorkerTask =
  | { kind: 'telegrams'; buf: ArrayBuffer }
  | { kind: 'frames'; layout: CompiledLayout; frames: string[] }
  | { kind: 'crash' };

/**
 * Batch buffer: u32 count | count x (u32 hex length, u8 key state 0 none / 1 key / 2 bad key, 16 key bytes) | hex ASCII.
 */
export function handleTelegrams(buf: ArrayBuffer): string {
  const dv = new DataView(buf);
  const bytes = new Uint8Array(buf);
  const count = dv.getUint32(0, true);
  let hp = 4;
  let dp = 4 + count * 21;
  const out: unknown[] = new Array(count);
  const key = new Uint8Array(16);
  for (let i = 0; i < count; i++) {
    const len = dv.getUint32(hp, true);
    const ks = bytes[hp + 4]!;
    key.set(bytes.subarray(hp + 5, hp + 21));
    hp += 21;
    if (ks === 2) {
      out[i] = { status: 'rejected_undecodable', reason: 'key must be 32 hex digits' };
      dp += len;
      continue;
    }
    if (len > core.IN.length) {
      out[i] = { status: 'invalid', reason: REASONS[E.TOO_LONG] };
      dp += len;
      continue;
    }
    core.IN.set(bytes.subarray(dp, dp + len));
    dp += len;
    let code: number;
    try {
      code = runTelegram(core, len, ks === 1 ? key : null);
    } catch (err) {
      // the decoder never traps by design; keep the batch alive if it ever does
      out[i] = { status: 'rejected_undecodable', reason: 'internal decoder error: ' + String(err) };
      continue;
    }
    out[i] = code === RC.NEED_CRYPTO ? { status: 'rejected_undecodable', reason: REASONS[E.UNSUPPORTED_SEC] } : outcomeOf(core, code);
  }
  return JSON.stringify(out);
}

export default function handler(task: WorkerTask): string {
  if (task.kind === 'telegrams') return handleTelegrams(task.buf);
  if (task.kind === 'frames') return JSON.stringify(task.frames.map((f) => decodeFrameSync(core, task.layout, f)));
  if (task.kind === 'crash') process.exit(70); // test hook: kills this worker thread
  throw new Error('unknown task');
}
