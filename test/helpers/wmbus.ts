// Synthetic wM-Bus frames for compact-frame tests: a full frame (L C M A CI 7A ...) with
// three records, and the compact frame (CI 79) of the same meter whose format signature
// is the CRC-16 of those record headers.

/** CRC-16 of EN 13757 (polynomial 0x3D65, inverted), as the frames carry it. */
export function crc16(b: Uint8Array, off: number, len: number): number {
  let c = 0
  for (let i = 0; i < len; i++) {
    c ^= b[off + i]! << 8
    for (let k = 0; k < 8; k++) c = c & 0x8000 ? ((c << 1) ^ 0x3d65) & 0xffff : (c << 1) & 0xffff
  }
  return c ^ 0xffff
}

// records: 04 13 (volume l, 4 bytes), 02 5B (flow temperature, 2 bytes), 44 13 (volume at storage 1)
export const HDRS = ['0413', '025B', '4413']

function idHex(id: number): string {
  const s = id.toString().padStart(8, '0')
  return s.slice(6, 8) + s.slice(4, 6) + s.slice(2, 4) + s.slice(0, 2)
}
function frame(body: string): string {
  const n = body.length / 2
  return n.toString(16).padStart(2, '0').toUpperCase() + body
}
function le32(v: number): string {
  const h = v.toString(16).padStart(8, '0')
  return h.slice(6, 8) + h.slice(4, 6) + h.slice(2, 4) + h.slice(0, 2)
}

/** Full frame of meter `id` (manufacturer KAM) reading `litres`. */
export function fullFrame(id: number, litres: number): string {
  const le = le32(litres)
  return frame(`442D2C${idHex(id)}1B167A01000000` + `0413${le}025B1200` + `4413${le}`)
}

/**
 * Compact frame of meter `id` reading `litres`, for the format with these record headers.
 * Its data CRC is 0000 (never right) unless `dataCrc`: then that of the records it stands for.
 */
export function compactFrame(id: number, litres: number, headers = HDRS, dataCrc = false): string {
  const sig = crc16(Buffer.from(headers.join(''), 'hex'), 0, headers.join('').length / 2)
  const le = le32(litres)
  const data = [le, '1200', le]
  const records = Buffer.from(headers.map((h, i) => h + (data[i] ?? '')).join(''), 'hex')
  const crc = dataCrc ? crc16(records, 0, records.length) : 0
  const lowFirst = (v: number) =>
    (v & 0xff).toString(16).padStart(2, '0') + (v >> 8).toString(16).padStart(2, '0')
  return frame(`442D2C${idHex(id)}1B1679${lowFirst(sig)}${lowFirst(crc)}${le}1200${le}`)
}
