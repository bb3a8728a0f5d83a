// The rollup feed's rows (embedded engine, rollup-feed.ts) as RowBinary: every stored
// reading's feed row is written by the ingest path, so its format is the cheapest one for
// both sides. As JSONEachRow lines (~110 bytes each) the feed's INSERT spent two thirds of
// its CPU parsing them, and building their text was a string of ~20 pieces per reading;
// here a row is ~45 bytes put in place through a DataView. Scratch, 160,000 gateway-like
// feed rows per INSERT into the real view, 12 INSERTs each: 0.17–0.19 against 0.34–0.36
// CPU ms per 1,000 rows, the parse alone (no view) 0.06 against 0.23; JavaScript, 500 rows
// per body: ~17 against ~120 ns per row (docs/benchmarks.md).
import type { RowOut } from './reading-row.js'

/** The feed's columns in the order a row gives them (migrations 11 and 13). */
export const FEED_COLUMNS = [
  'workspace_id',
  'meter_id',
  'kind',
  'recorded_at',
  'canonical_value',
  'version',
  'has_status',
  'status_raw_flags',
  'status_codes',
] as const

const TWO_32 = 4294967296
/** Enum8 values of `kind` (the feed's and readings' column type). */
const KIND_CODE: Record<string, number> = { consumption: 1, saldo: 2 }
/** The bytes of a row without a status report, at most (a null canonical value takes 8 fewer). */
const FIXED_BYTES = 8 + 8 + 1 + 8 + 9 + 8 + 1 + 1 + 1
const FIRST_BYTES = 16 << 10

/** Feed rows of stored readings, appended row by row into one growing buffer. */
export class FeedRows {
  private buf: Buffer = Buffer.allocUnsafe(0)
  private view = new DataView(this.buf.buffer, this.buf.byteOffset, 0)
  private pos = 0

  /** With room for `rows` rows without status reports from the start. */
  constructor(rows = 0) {
    if (rows > 0) this.reserve(rows * FIXED_BYTES)
  }

  /** Appends the feed row of readings row `r` of meter `meterId` in workspace `ws`. */
  row(ws: number, meterId: number, r: RowOut): void {
    const s = r.status
    this.reserve(s ? FIXED_BYTES + statusBytes(s.rawFlags) + statusBytes(s.statuses) : FIXED_BYTES)
    const d = this.view
    let p = this.pos
    p = int64(d, p, ws)
    p = int64(d, p, meterId)
    const kind = KIND_CODE[r.kind]
    if (kind === undefined) throw new Error(`no rollup feed row for kind ${r.kind}`)
    d.setUint8(p++, kind)
    // DateTime64(3): signed milliseconds (readings reach back to 1900).
    p = int64(d, p, r.recordedAtMs)
    // Nullable(Float64): a null byte, then the value unless null (as JSON, not finite is null).
    const v = r.canonicalValue
    if (v === null || !Number.isFinite(v)) d.setUint8(p++, 1)
    else {
      d.setUint8(p++, 0)
      d.setFloat64(p, v, true)
      p += 8
    }
    if (!s) {
      // version 0 (8 bytes), has_status 0, two empty arrays (a zero length each).
      for (let k = 0; k < 11; k++) d.setUint8(p + k, 0)
      this.pos = p + 11
    } else {
      p = int64(d, p, r.version)
      d.setUint8(p++, 1)
      p = this.strings(p, s.rawFlags)
      this.pos = this.strings(p, s.statuses)
    }
  }

  /** The rows written, as one buffer of their bytes (a view: the writer is done with). */
  take(): Buffer {
    return this.buf.subarray(0, this.pos)
  }

  /** An Array(String): its length and each string's, as LEB128, and each string's UTF-8. */
  private strings(p: number, items: readonly string[]): number {
    p = varint(this.view, p, items.length)
    for (const item of items) {
      const n = Buffer.byteLength(item)
      p = varint(this.view, p, n)
      this.buf.write(item, p, n, 'utf8')
      p += n
    }
    return p
  }

  private reserve(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return
    const size = Math.max(FIRST_BYTES, this.buf.length * 2, this.pos + bytes)
    const next = Buffer.allocUnsafeSlow(size)
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
    this.view = new DataView(next.buffer, next.byteOffset, next.length)
  }
}

/** Upper bound of an Array(String)'s bytes (LEB128 lengths of at most 5 bytes each). */
function statusBytes(items: readonly string[]): number {
  let n = 5
  for (const item of items) n += 5 + item.length * 3
  return n
}

/**
 * An integer of magnitude below 2^53 as 64 bits, little-endian, two's complement: the same
 * bytes for an Int64 (a time before 1970) and, when not negative, a UInt64 (ids, versions).
 */
function int64(d: DataView, p: number, v: number): number {
  const high = Math.floor(v / TWO_32)
  d.setUint32(p, v - high * TWO_32, true)
  d.setInt32(p + 4, high, true)
  return p + 8
}

function varint(d: DataView, p: number, v: number): number {
  while (v >= 0x80) {
    d.setUint8(p++, (v & 0x7f) | 0x80)
    v >>>= 7
  }
  d.setUint8(p++, v)
  return p
}

function readVarint(b: Uint8Array, p: number): [number, number] {
  let v = 0
  let shift = 0
  for (;;) {
    const c = b[p++]!
    v += (c & 0x7f) * 2 ** shift
    if (c < 0x80) return [v, p]
    shift += 7
  }
}

/**
 * Whether any of `rows` (feed rows as `FeedRows` writes them) carries a status report: asked
 * only before status reports are read (rollup-feed.ts), so rows are walked, not marked.
 */
export function feedRowsCarryStatus(rows: Uint8Array): boolean {
  let p = 0
  while (p < rows.length) {
    p += 8 + 8 + 1 + 8
    p += rows[p] === 1 ? 1 : 9
    p += 8
    if (rows[p++] === 1) return true
    for (let a = 0; a < 2; a++) {
      let n: number
      ;[n, p] = readVarint(rows, p)
      for (let i = 0; i < n; i++) {
        let len: number
        ;[len, p] = readVarint(rows, p)
        p += len
      }
    }
  }
  return false
}
