// UUIDv7 (RFC 9562): 48-bit millisecond time, a 12-bit counter, then random bits. Delivery
// ids sort by creation, so "newest first" needs no extra sequence column. Within one
// millisecond the counter steps (RFC 9562 method 1); on overflow the time moves on by 1 ms.
import crypto from 'node:crypto'

let lastMs = -1
let counter = 0
// Random bytes drawn 4 KiB at a time: one draw per id was a system call per event.
const pool = Buffer.alloc(4096)
let used = pool.length

export function uuid7(nowMs: number): string {
  if (nowMs > lastMs) {
    lastMs = nowMs
    counter = crypto.randomInt(0, 0x400) // headroom: at least 3,072 ids before a carry
  } else if (++counter > 0xfff) {
    lastMs++
    counter = 0
  }
  if (used === pool.length) {
    crypto.randomFillSync(pool)
    used = 0
  }
  const b = Buffer.from(pool.subarray(used, used + 16))
  used += 16
  b.writeUIntBE(lastMs, 0, 6)
  b[6] = 0x70 | (counter >> 8)
  b[7] = counter & 0xff
  b[8] = 0x80 | (b[8]! & 0x3f)
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}
