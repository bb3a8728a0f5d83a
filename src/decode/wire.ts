// Compact worker -> main thread result format: one transferable ArrayBuffer per
// batch. Per telegram (8-byte aligned): Int32 header [code, reason, jsonLen, unit],
// then for decoded telegrams Int32 [st, errFlags, hasId, id or wired address],
// Float64 value, Int32 telegram fingerprint (+ 4 padding), and the stored raw payload
// (`{"telegram":"<hex>","decoded":{"link":…,"records":[…]}}`) in UTF-8 as a TabSeparated
// field (`inTsv`: its backslashes doubled), padded to 8, built in the worker. The readings
// INSERT carries those bytes as they are (docs/decoders.md). Nothing builds record objects
// (`rawPayload` and `records` are made from the bytes on read).
// After the telegrams: Int32 length, then the batch's compact-format events as JSON
// (rare: a format new to the worker, or one it did not know).
import type { DecoderCore } from './core.js'
import { RC, REASONS, E, S } from './layout.js'
import { decodedTsvBound, writeDecodedTsv } from './payload-bytes.js'
import type { TelegramOutcome } from './telegram-outcome.js'
import { fromTsv } from './payload-records.js'
import { statusFlags } from './status-flags.js'
import { selectedValue } from './register-value.js'
import { fingerprintOf } from './telegram-identity.js'
import { printedId } from './telegram-text.js'

/** Bytes before each telegram's hex in a batch buffer going to a worker (worker.ts). */
export const JOB_HEAD = 25

export const REASON_BAD_KEY = 255
export const REASON_INTERNAL = 254

const pad8 = (n: number) => (n + 7) & ~7
/** A result buffer's size: the next power of two from 64 KB (a batch of 500 plain telegrams: ~1.2 MB). */
const roomFor = (n: number) => Math.max(1 << 16, 2 ** Math.ceil(Math.log2(n)))

const UNITS = [null, 'kwh', 'm3'] as const
// The payload's fixed parts (no backslash in them: the same escaped or not).
const PRE = Buffer.from('{"telegram":"', 'latin1')
const MID = Buffer.from('","decoded":', 'latin1')
const END = Buffer.from('}', 'latin1')
const OK_HEAD = 16 + 16 + 8 + 8 // + Int32 fingerprint, padding

/**
 * A compact-frame format the worker learnt from a full frame (`format`: the table entry
 * as hex) or did not know for a compact frame (`format` null), by the telegram's index in
 * the batch. `id` and `m` are the meter's link identity as the decoder holds it.
 */
export interface FormatEvent {
  index: number
  id: number
  m: number
  sig: number
  format: string | null
}

export class ResultWriter {
  private buf = new ArrayBuffer(1 << 20)
  private u8 = new Uint8Array(this.buf)
  private b = Buffer.from(this.buf)
  private i32 = new Int32Array(this.buf)
  private f64 = new Float64Array(this.buf)
  private pos = 0
  private formats: FormatEvent[] = []

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.byteLength) return
    let size = this.buf.byteLength * 2
    while (size < this.pos + n) size *= 2
    const nb = new ArrayBuffer(size)
    new Uint8Array(nb).set(this.u8.subarray(0, this.pos))
    this.buf = nb
    this.u8 = new Uint8Array(nb)
    this.b = Buffer.from(nb)
    this.i32 = new Int32Array(nb)
    this.f64 = new Float64Array(nb)
  }

  reset(): void {
    this.pos = 0
    this.formats = []
  }

  format(e: FormatEvent): void {
    this.formats.push(e)
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

  /**
   * A decoded telegram (core state after runTelegram returned OK); `hex` holds the
   * telegram's ASCII hex digits as sent (all hex: the decoder accepted them).
   */
  ok(core: DecoderCore, hex: Uint8Array): void {
    const { CTRL } = core
    this.ensure(
      OK_HEAD + PRE.length + hex.length + MID.length + decodedTsvBound(core) + END.length + 8,
    )
    const h = this.pos >> 2
    const { value, unit } = selectedValue(core)
    this.i32[h] = RC.OK
    this.i32[h + 1] = CTRL[S.REASON]!
    this.i32[h + 3] = unit === 'kwh' ? 1 : unit === 'm3' ? 2 : 0
    this.i32[h + 4] = CTRL[S.ST]!
    this.i32[h + 5] = CTRL[S.ERRFLAGS]!
    this.i32[h + 6] = CTRL[S.HAS_ID]!
    this.i32[h + 7] = CTRL[S.HAS_ID] ? CTRL[S.ID]! : CTRL[S.WIRED_ADDR]!
    this.f64[(this.pos + 32) >> 3] = value
    this.i32[h + 10] = fingerprintOf(core)
    let p = this.pos + OK_HEAD
    const start = p
    this.u8.set(PRE, p)
    p += PRE.length
    this.u8.set(hex, p)
    p += hex.length
    this.u8.set(MID, p)
    p += MID.length
    p = writeDecodedTsv(core, this.u8, p)
    // A typed array drops writes past its end: a payload longer than its bound would be
    // stored cut short. The bound is tested on every vector; this keeps it honest.
    if (p > this.u8.length) throw new Error('decoded payload longer than its bound')
    this.u8.set(END, p)
    p += END.length
    this.i32[h + 2] = p - start
    this.pos = start + pad8(p - start)
  }

  /**
   * The written bytes with the format events appended, copied for transfer: into `into` (a
   * buffer of an earlier batch the main thread is done with) where they fit, else into a new
   * buffer with room to spare, so that it fits the batches after it when it comes back.
   */
  take(into: ArrayBuffer | null = null): Uint8Array {
    const json = this.formats.length ? JSON.stringify(this.formats) : ''
    this.ensure(8 + json.length)
    this.i32[this.pos >> 2] = json.length // ASCII only: numbers and hex
    this.b.write(json, this.pos + 4, 'latin1')
    this.pos += pad8(4 + json.length)
    const out =
      into && into.byteLength >= this.pos
        ? new Uint8Array(into, 0, this.pos)
        : new Uint8Array(new ArrayBuffer(roomFor(this.pos)), 0, this.pos)
    out.set(this.u8.subarray(0, this.pos))
    return out
  }
}

function reasonText(code: number, reason: number): string {
  if (reason === REASON_BAD_KEY) return 'key must be 32 hex digits (or 16 for a DES key)'
  if (reason === REASON_INTERNAL) return 'internal decoder error'
  if (code === RC.UNCONFIGURED) return REASONS[E.ENCRYPTED_NO_KEY]!
  return REASONS[reason || E.NOT_DECODED] ?? 'undecodable'
}

/**
 * An ok outcome read from the wire: the payload stays the worker's UTF-8 bytes (a view of the
 * result buffer); `rawPayload`, `rawJson` and `records` are made from them on read (tests,
 * back-compat).
 */
class DecodedTelegram {
  readonly status = 'ok' as const
  constructor(
    readonly identifier: string,
    readonly value: number,
    readonly unit: 'kwh' | 'm3' | null,
    readonly rawFlags: string[],
    readonly statuses: string[],
    readonly rawTsvBytes: Uint8Array,
    readonly fingerprint: number,
  ) {}

  get rawPayload(): string {
    const b = this.rawTsvBytes
    return fromTsv(Buffer.from(b.buffer, b.byteOffset, b.length).toString('utf8'))
  }

  get rawJson(): string {
    return JSON.stringify(this.rawPayload)
  }

  get records(): unknown {
    return (JSON.parse(this.rawPayload) as { decoded: unknown }).decoded
  }
}

export function readResults(res: Uint8Array, count: number): TelegramOutcome[] {
  return readBatch(res, count).outcomes
}

/**
 * A batch's outcomes in job order and its compact-format events, from the worker's result
 * (`ResultWriter.take`: the bytes from the start of their buffer). The ok outcomes' payloads
 * are views of that buffer.
 */
export function readBatch(
  res: Uint8Array,
  count: number,
): { outcomes: TelegramOutcome[]; formats: FormatEvent[] } {
  if (res.byteOffset !== 0) throw new Error('a batch result starts its buffer')
  const buf = res.buffer as ArrayBuffer
  const length = res.byteLength
  const i32 = new Int32Array(buf, 0, length >> 2)
  const f64 = new Float64Array(buf, 0, length >> 3)
  const b = Buffer.from(buf, 0, length)
  const out: TelegramOutcome[] = new Array(count)
  let pos = 0
  for (let i = 0; i < count; i++) {
    const h = pos >> 2
    const code = i32[h]!,
      reason = i32[h + 1]!
    if (code !== RC.OK) {
      pos += 16
      out[i] =
        code === RC.INVALID
          ? { status: 'invalid', reason: reasonText(code, reason) }
          : code === RC.UNCONFIGURED
            ? { status: 'rejected_unconfigured', reason: reasonText(code, reason) }
            : { status: 'rejected_undecodable', reason: reasonText(code, reason) }
      continue
    }
    const jsonLen = i32[h + 2]!
    const { rawFlags, statuses } = statusFlags(i32[h + 4]!, i32[h + 5]!)
    const start = pos + OK_HEAD
    out[i] = new DecodedTelegram(
      i32[h + 6] ? printedId(i32[h + 7]!) : 'p' + i32[h + 7]!,
      f64[(pos + 32) >> 3]!,
      UNITS[i32[h + 3]!] ?? null,
      rawFlags,
      statuses,
      new Uint8Array(buf, start, jsonLen),
      i32[h + 10]! >>> 0,
    )
    pos = start + pad8(jsonLen)
  }
  const n = pos + 4 <= length ? i32[pos >> 2]! : 0
  const formats = n ? (JSON.parse(b.toString('latin1', pos + 4, pos + 4 + n)) as FormatEvent[]) : []
  return { outcomes: out, formats }
}
