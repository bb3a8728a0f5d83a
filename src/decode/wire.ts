// Compact worker -> main thread result format: one transferable ArrayBuffer per
// batch. Per telegram (8-byte aligned): Int32 header [code, reason, frameLen,
// nrec], then for decoded telegrams CTRL (64 x i32), the frame bytes (padded
// to 8) and nrec record rows (REC_W doubles). Records are turned into JSON
// objects lazily, only when someone reads `records`.
import type { DecoderCore } from './core.js'
import { RC, REASONS, E, REC_W, S } from './layout.js'
import {
  buildRecords,
  linkInfo,
  identifierOf,
  selectedValue,
  statusFlags,
  type TelegramOutcome,
} from './telegram.js'

export const REASON_BAD_KEY = 255
export const REASON_INTERNAL = 254

const pad8 = (n: number) => (n + 7) & ~7

export class ResultWriter {
  private buf = new ArrayBuffer(1 << 20)
  private u8 = new Uint8Array(this.buf)
  private i32 = new Int32Array(this.buf)
  private pos = 0

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.byteLength) return
    let size = this.buf.byteLength * 2
    while (size < this.pos + n) size *= 2
    const nb = new ArrayBuffer(size)
    new Uint8Array(nb).set(this.u8.subarray(0, this.pos))
    this.buf = nb
    this.u8 = new Uint8Array(nb)
    this.i32 = new Int32Array(nb)
  }

  reset(): void {
    this.pos = 0
  }

  simple(code: number, reason: number): void {
    this.ensure(16)
    const h = this.pos >> 2
    this.i32[h] = code
    this.i32[h + 1] = reason
    this.i32[h + 2] = 0
    this.i32[h + 3] = 0
    this.pos += 16
  }

  full(core: DecoderCore, code: number): void {
    const flen = Math.min(core.CTRL[S.END]!, core.F.length)
    const nrec = code === RC.OK ? core.CTRL[S.NREC]! : 0
    const need = 16 + 256 + pad8(flen) + nrec * REC_W * 8
    this.ensure(need)
    const h = this.pos >> 2
    this.i32[h] = code
    this.i32[h + 1] = core.CTRL[S.REASON]!
    this.i32[h + 2] = flen
    this.i32[h + 3] = nrec
    let p = this.pos + 16
    this.i32.set(core.CTRL, p >> 2)
    p += 256
    this.u8.set(core.F.subarray(0, flen), p)
    p += pad8(flen)
    if (nrec > 0)
      new Float64Array(this.buf, p, nrec * REC_W).set(core.REC.subarray(0, nrec * REC_W))
    p += nrec * REC_W * 8
    this.pos = p
  }

  /** Copy of the written bytes, ready for transfer. */
  take(): ArrayBuffer {
    return this.buf.slice(0, this.pos)
  }
}

function reasonText(code: number, reason: number): string {
  if (reason === REASON_BAD_KEY) return 'key must be 32 hex digits'
  if (reason === REASON_INTERNAL) return 'internal decoder error'
  if (code === RC.UNCONFIGURED) return REASONS[E.ENCRYPTED_NO_KEY]!
  return REASONS[reason || E.NOT_DECODED] ?? 'undecodable'
}

export function readResults(buf: ArrayBuffer, count: number): TelegramOutcome[] {
  const i32 = new Int32Array(buf)
  const u8 = new Uint8Array(buf)
  const out: TelegramOutcome[] = new Array(count)
  let pos = 0
  for (let i = 0; i < count; i++) {
    const h = pos >> 2
    const code = i32[h]!,
      reason = i32[h + 1]!,
      flen = i32[h + 2]!,
      nrec = i32[h + 3]!
    pos += 16
    if (code !== RC.OK) {
      if (flen > 0) pos += 256 + pad8(flen)
      out[i] =
        code === RC.INVALID
          ? { status: 'invalid', reason: reasonText(code, reason) }
          : code === RC.UNCONFIGURED
            ? { status: 'rejected_unconfigured', reason: reasonText(code, reason) }
            : { status: 'rejected_undecodable', reason: reasonText(code, reason) }
      continue
    }
    const CTRL = new Int32Array(buf, pos, 64)
    pos += 256
    const F = u8.subarray(pos, pos + flen)
    pos += pad8(flen)
    const REC = new Float64Array(buf, pos, nrec * REC_W)
    pos += nrec * REC_W * 8
    const view = { CTRL, F, REC } as unknown as DecoderCore
    const { value, unit } = selectedValue(view)
    const { rawFlags, statuses } = statusFlags(CTRL[S.ST]!, CTRL[S.ERRFLAGS]!)
    const o = {
      status: 'ok',
      identifier: identifierOf(view),
      value,
      unit,
      rawFlags,
      statuses,
    } as TelegramOutcome & { records?: unknown }
    let cache: unknown
    Object.defineProperty(o, 'records', {
      enumerable: true,
      configurable: true,
      get() {
        cache ??= { link: linkInfo(view), records: buildRecords(view) }
        return cache
      },
    })
    out[i] = o
  }
  return out
}
