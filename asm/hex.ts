// Hex text (ASCII in IN) to bytes (F).
import { IN, F, F_MAX } from "./state";

function nib(c: i32): i32 {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** Decodes len ASCII hex chars from IN into F. Returns byte count, -1 not hex, -2 odd length, -3 too long. */
export function hexToFrame(len: i32): i32 {
  if ((len & 1) != 0) {
    for (let i = 0; i < len; i++) if (nib(i32(unchecked(IN[i]))) < 0) return -1;
    return -2;
  }
  const n = len >> 1;
  if (n > F_MAX) return -3;
  for (let i = 0; i < n; i++) {
    const h = nib(i32(unchecked(IN[2 * i])));
    const l = nib(i32(unchecked(IN[2 * i + 1])));
    if ((h | l) < 0) return -1;
    unchecked((F[i] = u8((h << 4) | l)));
  }
  return n;
}
