// Cheap synchronous look at a telegram on the main thread (batch validation):
// checks hex and lengths, block CRCs / wired checksum, and returns the meter
// identifier (last address seen: DLL, then ELL 8E/8F, then long TPL 72).
export type TelegramInspection =
  | { ok: true; identifier: string; manufacturer: string; encrypted: boolean }
  | { ok: false; error: string }

const HEX = /^[0-9A-Fa-f]*$/

const TABLE = (() => {
  const t = new Uint16Array(256)
  for (let i = 0; i < 256; i++) {
    let c = i << 8
    for (let k = 0; k < 8; k++) c = c & 0x8000 ? ((c << 1) ^ 0x3d65) & 0xffff : (c << 1) & 0xffff
    t[i] = c
  }
  return t
})()

export function crc16(b: Uint8Array, off: number, len: number): number {
  let c = 0
  for (let i = 0; i < len; i++) c = ((c << 8) & 0xffff) ^ TABLE[((c >> 8) ^ b[off + i]!) & 0xff]!
  return c ^ 0xffff
}

function crcAt(b: Uint8Array, off: number, len: number): boolean {
  if (off + len + 2 > b.length) return false
  return ((b[off + len]! << 8) | b[off + len + 1]!) === crc16(b, off, len)
}

function idOf(b: Uint8Array, p: number): string {
  let s = ''
  for (let i = 3; i >= 0; i--) s += b[p + i]!.toString(16).padStart(2, '0')
  return s
}

function mfct(m: number): string {
  return String.fromCharCode(((m >> 10) & 31) + 64, ((m >> 5) & 31) + 64, (m & 31) + 64)
}

/** Frame of exactly L + 1 bytes: format B, format A whose L counts the CRCs, or no CRCs. */
function exactFrame(b: Uint8Array): Uint8Array | string {
  const n = b.length
  const isB = n <= 128 ? n >= 12 && crcAt(b, 0, n - 2) : crcAt(b, 0, 126) && crcAt(b, 128, n - 130)
  if (isB) {
    const out =
      n <= 128
        ? b.slice(0, n - 2)
        : new Uint8Array([...b.subarray(0, 126), ...b.subarray(128, n - 2)])
    out[0] = out.length - 1
    return out
  }
  if (crcAt(b, 0, 10)) {
    const r = n - 12
    const tail = r % 18
    if (tail === 0 || tail > 2) {
      const content = 10 + Math.floor(r / 18) * 16 + (tail > 2 ? tail - 2 : 0)
      const a = stripFormatA(b, content - 1)
      if (typeof a !== 'string') {
        a[0] = a.length - 1
        return a
      }
    }
  }
  return b
}

/** Format A: first block 10 bytes, then 16-byte blocks, each followed by its CRC. */
function stripFormatA(b: Uint8Array, L: number): Uint8Array | string {
  if (!crcAt(b, 0, 10)) return 'block CRC mismatch'
  const out = new Uint8Array(L + 1)
  out.set(b.subarray(0, 10))
  let src = 12,
    dst = 10
  while (dst < L + 1) {
    const bl = Math.min(16, L + 1 - dst)
    if (!crcAt(b, src, bl)) return 'block CRC mismatch'
    out.set(b.subarray(src, src + bl), dst)
    dst += bl
    src += bl + 2
  }
  return out
}

/** Bytes after the frame that may be ignored: at most 4 of any value, or all 00 / all FF. */
function trailingOk(b: Uint8Array, from: number): boolean {
  if (b.length - from <= 4) return true
  const p = b[from]
  if (p !== 0 && p !== 0xff) return false
  for (let i = from + 1; i < b.length; i++) if (b[i] !== p) return false
  return true
}

/**
 * Strips format A/B block CRCs; returns the frame without them, or an error. The same
 * L-field rules as asm/frames.ts: a frame longer than L + 1 is read by L when the rest is
 * a CRC, link-quality bytes (at most 4) or padding.
 */
export function normalizeFrame(b: Uint8Array): Uint8Array | string {
  const n = b.length
  if (n < 11) return 'frame too short'
  const L = b[0]!
  if (n === L + 1) return exactFrame(b)
  if (n < L + 1) return 'frame shorter than its length field (truncated)'
  if (L >= 9) {
    const fa = L + 1 + 2 * (1 + ((L - 9 + 15) >> 4))
    if (n === fa) return stripFormatA(b, L)
    if (n > fa && trailingOk(b, fa) && crcAt(b, 0, 10)) return stripFormatA(b.subarray(0, fa), L)
  }
  if (L + 1 >= 11 && trailingOk(b, L + 1)) return exactFrame(b.subarray(0, L + 1))
  return L + 1 < 11
    ? 'length field does not match frame length'
    : 'length field does not match frame length: the bytes after the frame it counts are neither a CRC nor padding'
}

/** Radio converter (type 37): an enhanced-identification record (07 79) names the meter behind it. */
function enhancedId(b: Uint8Array, p: number, end: number): string | null {
  while (p < end && b[p] === 0x2f) p++
  if (p + 10 <= end && b[p] === 0x07 && b[p + 1] === 0x79) return idOf(b, p + 2)
  return null
}

const DIEHL = new Set([0x11a5, 0x16f4, 0x2324, 0x4c30, 0x4e0c]) // DME EWT HYD SAP SPL

/** Diehl-group frame interpretation, as the decoder's link layer does it. */
function diehlInterpretation(b: Uint8Array): 'real_data' | 'prios' | 'sap_prios' | 'other' | null {
  if (b.length < 15) return null
  const m = b[2]! | (b[3]! << 8)
  if (!DIEHL.has(m) || (b[1] !== 0x44 && b[1] !== 0x46)) return null
  const ci = b[10]!
  if (ci === 0x71 || (ci === 0x7a && (b[14]! & 0x10) !== 0)) return 'real_data'
  if (ci >= 0xa0 && ci <= 0xa7) return m === 0x4c30 ? 'sap_prios' : 'prios'
  if (ci >= 0xb1 && ci <= 0xb3) return 'prios'
  return 'other'
}

export function inspectTelegram(hex: string): TelegramInspection {
  if (typeof hex !== 'string' || hex.length === 0)
    return { ok: false, error: 'must be a non-empty hex string' }
  if (!HEX.test(hex)) return { ok: false, error: 'must be hexadecimal' }
  if (hex.length % 2 !== 0) return { ok: false, error: 'must have an even number of hex digits' }
  if (hex.length > 8192) return { ok: false, error: 'frame too long' }
  const raw = Buffer.from(hex, 'hex')
  let b: Uint8Array
  let pos: number
  let end: number
  let identifier = ''
  let m = -1
  if (raw[0] === 0x68 && raw.length >= 6 && raw[3] === 0x68) {
    const l = raw[1]!
    if (raw[2] !== l || raw[raw.length - 1] !== 0x16)
      return { ok: false, error: 'malformed wired M-Bus long frame' }
    if (raw.length !== l + 6)
      return { ok: false, error: 'length field does not match frame length' }
    if (l < 3) return { ok: false, error: 'frame too short' }
    let cs = 0
    for (let i = 4; i < 4 + l; i++) cs = (cs + raw[i]!) & 0xff
    if (cs !== raw[raw.length - 2]) return { ok: false, error: 'wired frame checksum mismatch' }
    b = raw
    pos = 6
    end = raw.length - 2
    identifier = 'p' + raw[5]
  } else {
    const nf = normalizeFrame(raw)
    if (typeof nf === 'string') return { ok: false, error: nf }
    b = nf
    m = b[2]! | (b[3]! << 8)
    identifier = idOf(b, 4)
    pos = 10
    end = b.length
    const di = diehlInterpretation(b)
    // PRIOS / REAL_DATA send version, type, id0..id3 (asm/mfct.ts diehlLink)
    if (di === 'real_data' || di === 'prios') identifier = idOf(b, 6)
    // LFSR scrambling needs no configured key (default keys)
    if (di === 'real_data') return { ok: true, identifier, manufacturer: mfct(m), encrypted: false }
    // Apator NA-1: one AES block behind a manufacturer-specific CI
    if (m === 0x0601 && (b[10] === 0xa0 || b[10] === 0xa1) && b[9] === 0x07 && b.length === 29)
      return { ok: true, identifier, manufacturer: mfct(m), encrypted: true }
  }
  let encrypted = false
  for (let guard = 0; guard < 8; guard++) {
    if (pos >= end) return { ok: false, error: 'frame too short' }
    const ci = b[pos]!
    if (ci >= 0x8c && ci <= 0x8f) {
      const hl = ci === 0x8c ? 3 : ci === 0x8d ? 9 : ci === 0x8e ? 11 : 17
      if (pos + hl > end) return { ok: false, error: 'header truncated' }
      if (ci >= 0x8e) {
        m = b[pos + 3]! | (b[pos + 4]! << 8)
        identifier = idOf(b, pos + 5)
      }
      if (ci === 0x8d || ci === 0x8f) {
        const sn = ci === 0x8d ? pos + 3 : pos + 11
        if (b[sn + 3]! >> 5 !== 0) {
          const crcOff = sn + 4
          const plain =
            crc16(b, crcOff + 2, end - crcOff - 2) === (b[crcOff]! | (b[crcOff + 1]! << 8))
          if (!plain)
            return { ok: true, identifier, manufacturer: m >= 0 ? mfct(m) : '', encrypted: true }
        }
      }
      pos += hl
      continue
    }
    if (ci === 0x90) {
      if (pos + 4 > end) return { ok: false, error: 'header truncated' }
      const alen = b[pos + 1]!
      if (alen < 2 || pos + 2 + alen > end)
        return { ok: false, error: 'malformed AFL header or fragmented message' }
      pos += 2 + alen
      continue
    }
    let hl = 0
    if (ci === 0x78 && b[9] === 0x37) identifier = enhancedId(b, pos + 1, end) ?? identifier
    // short / long TPL header, also before a compact frame (7B / 73)
    if (ci === 0x7a || ci === 0x7b) hl = 5
    else if (ci === 0x72 || ci === 0x73) hl = 13
    if (hl > 0) {
      if (pos + hl > end) return { ok: false, error: 'header truncated' }
      if (hl === 13) {
        identifier = idOf(b, pos + 1)
        m = b[pos + 5]! | (b[pos + 6]! << 8)
      }
      const cf = b[pos + hl - 2]! | (b[pos + hl - 1]! << 8)
      const mode = (cf >> 8) & 0x1f
      if (mode !== 0) {
        const app = pos + hl + (mode === 7 ? 1 : 0)
        const plain = app + 2 <= end && b[app] === 0x2f && b[app + 1] === 0x2f
        if (!plain) encrypted = true
      }
      const type = hl === 13 ? b[pos + 8] : b[9]
      if (!encrypted && type === 0x37) identifier = enhancedId(b, pos + hl, end) ?? identifier
    }
    break
  }
  return { ok: true, identifier, manufacturer: m >= 0 ? mfct(m) : '', encrypted }
}
