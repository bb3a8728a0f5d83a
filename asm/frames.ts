// Frame layer: wired M-Bus long frames (68 L L 68 ... CS 16) and wireless
// frames starting at the L-field, with frame-format A or B block CRCs or none.
import { F, T, S_DLLCRC, S_FRAME, S_REASON, S_TRAIL, E_TOO_SHORT, E_LEN_MISMATCH, E_LEN_SHORT, E_LEN_TRAILING, E_DLL_CRC, E_WIRED_CS, E_WIRED_FRAME, S_END, set } from "./state";
import { crc16 } from "./crc";

function crcAt(off: i32, len: i32): bool {
  // block CRCs are sent high byte first
  if (off + len + 2 > 4096) return false;
  const c = crc16(F, off, len);
  return (i32(unchecked(F[off + len])) << 8 | i32(unchecked(F[off + len + 1]))) == c;
}

/** Validates the frame in F (n bytes), strips block CRCs. Returns the new length or -1 (reason set). */
export function frameLayer(n: i32): i32 {
  if (n < 1) {
    set(S_REASON, E_TOO_SHORT);
    return -1;
  }
  const b0 = i32(unchecked(F[0]));
  if (b0 == 0x68 && n >= 6 && i32(unchecked(F[3])) == 0x68) {
    // wired long frame
    const l = i32(unchecked(F[1]));
    if (i32(unchecked(F[2])) != l) {
      set(S_REASON, E_WIRED_FRAME);
      return -1;
    }
    if (n != l + 6) {
      set(S_REASON, E_LEN_MISMATCH);
      return -1;
    }
    if (i32(unchecked(F[n - 1])) != 0x16) {
      set(S_REASON, E_WIRED_FRAME);
      return -1;
    }
    if (l < 3) {
      set(S_REASON, E_TOO_SHORT);
      return -1;
    }
    let cs: i32 = 0;
    for (let i = 4; i < 4 + l; i++) cs = (cs + i32(unchecked(F[i]))) & 0xff;
    if (cs != i32(unchecked(F[n - 2]))) {
      set(S_REASON, E_WIRED_CS);
      return -1;
    }
    set(S_FRAME, 2);
    set(S_DLLCRC, 0);
    set(S_END, n - 2);
    return n;
  }
  set(S_FRAME, 1);
  const L = b0;
  if (n < 11) {
    set(S_REASON, E_TOO_SHORT);
    return -1;
  }
  if (n == L + 1) return exact(n);
  if (n < L + 1) {
    set(S_REASON, E_LEN_SHORT);
    return -1;
  }
  // longer than L + 1: format A (L excludes the block CRCs), possibly with trailing bytes
  if (L >= 9) {
    const rest = L - 9;
    const nblk = 1 + ((rest + 15) >> 4);
    const fa = L + 1 + 2 * nblk;
    if (n == fa) return stripA(n, L);
    if (n > fa && trailingOk(fa, n) && crcAt(0, 10)) {
      set(S_TRAIL, n - fa);
      return stripA(fa, L);
    }
  }
  // the L-field counts fewer bytes than were handed over: decode by L when the rest is a
  // CRC, link-quality bytes (at most 4 in all) or padding
  if (L + 1 >= 11 && trailingOk(L + 1, n)) {
    set(S_TRAIL, n - L - 1);
    return exact(L + 1);
  }
  set(S_REASON, L + 1 < 11 ? E_LEN_MISMATCH : E_LEN_TRAILING);
  return -1;
}

/** Bytes [from, n) after the frame may be ignored: at most 4 of any value, or all 00 or all FF. */
function trailingOk(from: i32, n: i32): bool {
  if (n - from <= 4) return true;
  const p = i32(unchecked(F[from]));
  if (p != 0 && p != 0xff) return false;
  for (let i = from + 1; i < n; i++) if (i32(unchecked(F[i])) != p) return false;
  return true;
}

/** A frame of n = L + 1 bytes: format B, format A whose L counts the CRCs, or no CRCs. */
function exact(n: i32): i32 {
  if (isFormatB(n)) return stripB(n);
  if (crcAt(0, 10)) {
    // format A with the CRCs counted in L (some gateways do that): 10 + 2, then 16 + 2 blocks
    const r = n - 12;
    const tail = r % 18;
    if (tail == 0 || tail > 2) {
      const content = 10 + (r / 18) * 16 + (tail > 2 ? tail - 2 : 0);
      const m = stripA(n, content - 1);
      if (m > 0) {
        unchecked((F[0] = u8(m - 1)));
        return m;
      }
      set(S_REASON, 0); // a first-block CRC by chance: read it as a frame without CRCs
    }
  }
  set(S_DLLCRC, 0);
  set(S_END, n);
  return n;
}

function isFormatB(n: i32): bool {
  if (n < 12) return false;
  if (n <= 128) return crcAt(0, n - 2);
  return crcAt(0, 126) && crcAt(128, n - 130);
}

function stripB(n: i32): i32 {
  let m: i32 = 0;
  if (n <= 128) {
    m = n - 2;
  } else {
    for (let i = 0; i < n - 130; i++) unchecked((F[126 + i] = F[128 + i]));
    m = n - 4;
  }
  // L of the stripped frame counts the bytes after it
  unchecked((F[0] = u8(m - 1)));
  set(S_DLLCRC, 2);
  set(S_END, m);
  return m;
}

function stripA(n: i32, L: i32): i32 {
  if (!crcAt(0, 10)) {
    set(S_REASON, E_DLL_CRC);
    return -1;
  }
  for (let i = 0; i < 10; i++) unchecked((T[i] = F[i]));
  let src: i32 = 12;
  let dst: i32 = 10;
  while (dst < L + 1) {
    let bl = L + 1 - dst;
    if (bl > 16) bl = 16;
    if (!crcAt(src, bl)) {
      set(S_REASON, E_DLL_CRC);
      return -1;
    }
    for (let i = 0; i < bl; i++) unchecked((T[dst + i] = F[src + i]));
    dst += bl;
    src += bl + 2;
  }
  for (let i = 0; i < dst; i++) unchecked((F[i] = T[i]));
  set(S_DLLCRC, 1);
  set(S_END, dst);
  return dst;
}
