// Meter affinity for the decoder pool: which worker a telegram goes to.
//
// Compact frames (CI 79/7B/73) decode only on a decoder instance that has seen
// the meter's full frame (asm/compact.ts keeps the formats per instance), so
// every telegram of one meter must reach the same worker. The route is a hash
// of the meter's link-layer identity, read from the header bytes of the hex
// string on the main thread without decoding it (no hex parse of the payload,
// no CRC checks: a damaged frame may go anywhere, the decoder refuses it):
//
// - wireless: manufacturer + id of the last address seen in the unencrypted
//   headers: DLL (M, A), then ELL CI 8E/8F, then a long TPL header CI 72
//   (the same order as the decoder's printed id). Format A block CRCs are
//   skipped by offset arithmetic, so format A and B/none of a frame agree.
// - wired long frame (68 L L 68): the long TPL header's M + id when CI is
//   72/73, else the primary address.
//
// Version and device type are left out, like in the decoder's format key
// (printed id + manufacturer + signature).

const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

function nib(c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  const l = c | 0x20
  if (l >= 97 && l <= 102) return l - 87
  return -1
}

/** Byte at raw offset i of a hex string, or -1 (out of range or not hex). */
function rawByte(hex: string, i: number): number {
  const p = i * 2
  if (p + 1 >= hex.length) return -1
  const hi = nib(hex.charCodeAt(p))
  const lo = nib(hex.charCodeAt(p + 1))
  return hi < 0 || lo < 0 ? -1 : (hi << 4) | lo
}

function mix(h: number, b: number): number {
  return Math.imul(h ^ b, FNV_PRIME)
}

/** Hash of M (2 bytes at mOff) and id (4 bytes at idOff) read through `at`; -1 if a byte is missing. */
function identityHash(at: (p: number) => number, mOff: number, idOff: number): number {
  let h = FNV_OFFSET
  for (let k = 0; k < 2; k++) {
    const b = at(mOff + k)
    if (b < 0) return -1
    h = mix(h, b)
  }
  for (let k = 0; k < 4; k++) {
    const b = at(idOff + k)
    if (b < 0) return -1
    h = mix(h, b)
  }
  return h >>> 0
}

/**
 * Stable 32-bit hash of a telegram's meter identity (see above); 0 when the
 * string is too short or not hex where the identity should be.
 */
export function meterAffinity(hex: unknown): number {
  if (typeof hex !== 'string' || hex.length < 22) return 0
  const first = rawByte(hex, 0)
  if (first < 0) return 0
  const nbytes = hex.length >> 1
  if (first === 0x68 && rawByte(hex, 3) === 0x68) {
    // wired long frame: 68 L L 68 C A CI ...; long header: CI id(4) M(2) ...
    const at = (p: number) => rawByte(hex, p)
    const ci = at(6)
    if (ci === 0x72 || ci === 0x73) {
      const h = identityHash(at, 11, 7)
      if (h >= 0) return h
    }
    const a = at(5)
    return a < 0 ? 0 : mix(mix(FNV_OFFSET, 0x68), a) >>> 0
  }
  // wireless: L C M(2) A(6) | CI ... ; format A inserts 2 CRC bytes after
  // byte 9 and after every further 16 bytes
  const L = first
  const formatA = nbytes !== L + 1 && L >= 9
  const at = formatA
    ? (p: number) => (p < 10 ? rawByte(hex, p) : rawByte(hex, p + 2 * (1 + ((p - 10) >> 4))))
    : (p: number) => rawByte(hex, p)
  let h = identityHash(at, 2, 4)
  if (h < 0) return 0
  let pos = 10
  for (let guard = 0; guard < 4; guard++) {
    const ci = at(pos)
    if (ci === 0x8c) pos += 3
    else if (ci === 0x8d) {
      // encrypted ELL hides what follows; the decoder prints the DLL / ELL id
      if ((at(pos + 6) >> 5) & 7) break
      pos += 9
    } else if (ci === 0x8e || ci === 0x8f) {
      // CI CC ACC M(2) A(6) [SN(4) CRC(2)]
      const e = identityHash(at, pos + 3, pos + 5)
      if (e >= 0) h = e
      if (ci === 0x8f && (at(pos + 14) >> 5) & 7) break
      pos += ci === 0x8e ? 11 : 17
    } else if (ci === 0x90) {
      const alen = at(pos + 1)
      if (alen < 2) break
      pos += 2 + alen
    } else if (ci === 0x72 || ci === 0x73) {
      // CI id(4) M(2) version type ...
      const t = identityHash(at, pos + 5, pos + 1)
      if (t >= 0) h = t
      break
    } else break
  }
  return h
}

/** Worker index in [0, n) for a telegram. */
export function affinityIndex(hex: unknown, n: number): number {
  return n <= 1 ? 0 : meterAffinity(hex) % n
}
