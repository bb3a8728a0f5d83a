// The bytes of one INSERT, encoded as its rows are made. A readings INSERT used to be one
// string of thousands of row strings: V8 flattens such a string into a body-sized copy on
// its heap before Buffer.from encodes it, and the pieces and the copy stay alive until the
// INSERT is answered. Here rows are encoded into a buffer outside the heap a few kilobytes
// at a time, and their strings are garbage at once. Generic gateway rows, five quick bench
// pairs: 33.4 against 37.0 main-thread ms per 1,000 readings (medians).

import { joinBody } from './sql.js'

const FIRST_BLOCK_BYTES = 64 << 10
/** Blocks grow by doubling up to this size (a telegram INSERT's body is megabytes). */
const MAX_BLOCK_BYTES = 1 << 20
/**
 * Pieces are joined into a string of about this many UTF-16 units before each encode: one
 * `Buffer.write` per piece cost more than making the rows' text (scratch, bodies of 500
 * gateway rows of three pieces: 0.56–0.76 µs per row against 0.39–0.51 joined 16 k at a time).
 */
const ENCODE_UNITS = 16 << 10

/**
 * UTF-8 text appended piece by piece into blocks of bytes. A full block is kept and the
 * next one started, never copied into a larger one: a telegram INSERT's 2–3 MB used to be
 * copied about once more that way, and once more to join the requests' bodies, which the
 * block list also spares (group-commit.ts hands the pieces on).
 */
export class BodyWriter {
  private readonly full: Buffer[] = []
  // Allocated on the first encode: a request whose readings were all duplicates writes none.
  private buf = Buffer.alloc(0)
  private pos = 0
  private joined = ''

  /** Appends `s` as UTF-8. */
  text(s: string): void {
    this.joined += s
    if (this.joined.length >= ENCODE_UNITS) this.encode()
  }

  /** Appends bytes that are already UTF-8 (a telegram's payload from the decoder worker). */
  bytes(b: Uint8Array): void {
    this.encode()
    this.reserve(b.length)
    this.buf.set(b, this.pos)
    this.pos += b.length
  }

  /** The bytes written, in order; the writer is not to be used afterwards. */
  takeParts(): Buffer[] {
    this.encode()
    if (this.pos) this.full.push(this.buf.subarray(0, this.pos))
    return this.full
  }

  /** The bytes written as one buffer (a copy where there are several blocks). */
  take(): Buffer {
    return joinBody(this.takeParts())
  }

  private encode(): void {
    const s = this.joined
    if (!s) return
    this.joined = ''
    // A UTF-8 character takes at most 3 bytes per UTF-16 unit.
    this.reserve(s.length * 3)
    this.pos += this.buf.write(s, this.pos, 'utf8')
  }

  private reserve(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return
    if (this.pos) this.full.push(this.buf.subarray(0, this.pos))
    const next = Math.min(this.buf.length * 2, MAX_BLOCK_BYTES)
    this.buf = Buffer.allocUnsafe(Math.max(next, bytes, FIRST_BLOCK_BYTES))
    this.pos = 0
  }
}
