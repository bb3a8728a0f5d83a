// The bytes of one INSERT, encoded as its rows are made. A readings INSERT used to be one
// string of thousands of row strings: V8 flattens such a string into a body-sized copy on
// its heap before Buffer.from encodes it, and the pieces and the copy stay alive until the
// INSERT is answered. Here rows are encoded into a buffer outside the heap a few kilobytes
// at a time, and their strings are garbage at once. Generic gateway rows, five quick bench
// pairs: 33.4 against 37.0 main-thread ms per 1,000 readings (medians).

import { joinBody } from './sql.js'

const FIRST_BLOCK_BYTES = 64 << 10
/** The blocks a `BlockPool` hands out: a gateway request's body fits one, a telegram request's 4–6. */
export const POOL_BLOCK_BYTES = 256 << 10
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
  private buf: Buffer = Buffer.alloc(0)
  private pos = 0
  private joined = ''
  /** Blocks taken from `pool`, handed back by `release`. */
  private readonly taken: Buffer[] = []

  /** With a pool, blocks come from it and go back to it (`release`). */
  constructor(private readonly pool: BlockPool | null = null) {}

  /**
   * Hands the pool's blocks back: only once nothing reads the parts any more (the INSERT
   * that carried them has ended). The writer is not to be used afterwards.
   */
  release(): void {
    this.pool?.give(this.taken)
    this.taken.length = 0
  }

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
    this.pos = 0
    if (this.pool && bytes <= POOL_BLOCK_BYTES) {
      this.taken.push((this.buf = this.pool.take()))
      return
    }
    const next = Math.min(this.buf.length * 2, MAX_BLOCK_BYTES)
    this.buf = Buffer.allocUnsafe(Math.max(next, bytes, FIRST_BLOCK_BYTES))
  }
}

/**
 * Blocks for INSERT bodies, used again once their INSERT has ended. Every new block is
 * memory outside the V8 heap, and V8 answers a fast growth of that with a young-generation
 * collection ("external memory pressure"): a telegram request's body (1–2 MB, in blocks
 * doubling from 64 KB) made ~100 such collections, 8–20 ms each, in 320,000 telegrams of
 * `pipeline-cost.ts --telegram`; with blocks used again, ~28, and 13.2–14.1 main-thread ms
 * per 1,000 became 12.3–12.9 (two runs each, scratch).
 */
export class BlockPool {
  private readonly free: Buffer[] = []

  /** Keeps at most `max` idle blocks (`max` × 256 KB); more in use at once are made and dropped. */
  constructor(private readonly max = 64) {}

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(POOL_BLOCK_BYTES)
  }

  give(blocks: readonly Buffer[]): void {
    for (const b of blocks) if (this.free.length < this.max) this.free.push(b)
  }

  /** Idle blocks (tests). */
  get idle(): number {
    return this.free.length
  }
}
