// The decoder's numbers as text, in one place so that everything that shows or stores a
// telegram prints a value alike: the record objects (payload-records.ts), the payload bytes
// the workers write (payload-bytes.ts; test/decode/raw-payload.test.ts compares the two),
// identifiers and the analyzer.
import { D } from './layout.js'

const HEX2: string[] = Array.from(
  { length: 256 },
  (_, n) => (n < 16 ? '0' : '') + n.toString(16).toUpperCase(),
)

export function hex2(n: number): string {
  return HEX2[n] ?? (n < 16 ? '0' : '') + n.toString(16).toUpperCase()
}

/** Two lower-case hex digits per byte value (an identifier is printed for every telegram, twice). */
const HEX2_LOWER: string[] = HEX2.map((h) => h.toLowerCase())

export function printedId(id: number): string {
  return (
    HEX2_LOWER[id >>> 24]! +
    HEX2_LOWER[(id >>> 16) & 0xff]! +
    HEX2_LOWER[(id >>> 8) & 0xff]! +
    HEX2_LOWER[id & 0xff]!
  )
}

export function manufacturer(m: number): string {
  return String.fromCharCode(((m >> 10) & 31) + 64, ((m >> 5) & 31) + 64, (m & 31) + 64)
}

// The same values as `10 ** k`, made once (a power per record's value was ~4 % of a decoder
// worker's time).
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k)

function pow10(e: number): number {
  const k = Math.abs(e)
  return k < POW10.length ? POW10[k]! : 10 ** k
}

/** A record's number scaled by its decimal exponent, as every payload writer computes it. */
export function scaled(v: number, e: number): number {
  return e >= 0 ? v * pow10(e) : v / pow10(e)
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0')
}

/** A date or time record's value as stored (ASCII digits and separators). */
export function formatDate(t: number, v: number): string {
  const b = (i: number) => Math.floor(v / 2 ** (8 * i)) & 0xff
  if (t === D.DATE_G) {
    const day = b(0) & 31,
      month = b(1) & 15,
      year = 2000 + (((b(0) & 0xe0) >> 5) | ((b(1) & 0xf0) >> 1))
    return `${year}-${pad(month)}-${pad(day)}`
  }
  if (t === D.DATETIME_F) {
    const min = b(0) & 63,
      hour = b(1) & 31,
      day = b(2) & 31,
      month = b(3) & 15
    const year = 2000 + (((b(2) & 0xe0) >> 5) | ((b(3) & 0xf0) >> 1))
    return `${year}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(min)}`
  }
  if (t === D.DATETIME_I) {
    const sec = b(0) & 63,
      min = b(1) & 63,
      hour = b(2) & 31,
      day = b(3) & 31,
      month = b(4) & 15
    const year = 2000 + (((b(3) & 0xe0) >> 5) | ((b(4) & 0xf0) >> 1))
    return `${year}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(min)}:${pad(sec)}`
  }
  const sec = b(0) & 63,
    min = b(1) & 63,
    hour = b(2) & 31
  return `${pad(hour)}:${pad(min)}:${pad(sec)}`
}

export function hexOf(F: Uint8Array, off: number, len: number): string {
  let s = ''
  for (let i = 0; i < len; i++) s += hex2(F[off + i]!)
  return s
}

/**
 * Text the decoder found in the frame (a text value, a plain-text unit): a char per byte,
 * from `last` down to `first` (M-Bus sends text last char first).
 */
export function frameText(F: Uint8Array, first: number, last: number): string {
  let s = ''
  for (let k = last; k >= first; k--) s += String.fromCharCode(F[k]!)
  return s
}
