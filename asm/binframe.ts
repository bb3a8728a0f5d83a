// Declared binary frames (workspace profile `decoder`): fixed layouts of
// u8..u64, i8..i64, f32, f64, bcd1..bcd8, flags8/16, skip1..skip8.
// LAYOUT = [count, then per field: type, byte length, big-endian flag].
import { F, T } from "./state";

export const LAYOUT = new Int32Array(1 + 3 * 256);
export const FVAL = new Float64Array(256);

export const T_U: i32 = 1;
export const T_I: i32 = 2;
export const T_F: i32 = 3;
export const T_BCD: i32 = 4;
export const T_FLAGS: i32 = 5;
export const T_SKIP: i32 = 6;

/** Frame bytes are in F[0, n). Returns 0, -1 length mismatch, -(2 + field) invalid BCD in a field. */
export function decodeBinary(n: i32): i32 {
  const nf = unchecked(LAYOUT[0]);
  if (nf < 0 || nf > 256) return -1;
  let total: i32 = 0;
  for (let i = 0; i < nf; i++) total += unchecked(LAYOUT[2 + 3 * i]);
  if (total != n) return -1;
  let pos: i32 = 0;
  for (let i = 0; i < nf; i++) {
    const t = unchecked(LAYOUT[1 + 3 * i]);
    const len = unchecked(LAYOUT[2 + 3 * i]);
    const be = unchecked(LAYOUT[3 + 3 * i]) != 0;
    // T[k] = byte of significance k
    for (let k = 0; k < len; k++) unchecked((T[k] = be ? F[pos + len - 1 - k] : F[pos + k]));
    let v: f64 = 0;
    if (t == T_U || t == T_I || t == T_FLAGS) {
      // negative two's complement values are summed as complement + 1 so
      // that small negative 64-bit values stay exact
      const neg = t == T_I && (i32(unchecked(T[len - 1])) & 0x80) != 0;
      let mul: f64 = 1;
      for (let k = 0; k < len; k++) {
        const b = i32(unchecked(T[k]));
        v += f64(neg ? 255 - b : b) * mul;
        mul *= 256;
      }
      if (neg) v = -(v + 1);
    } else if (t == T_F) {
      v = len == 4 ? real32() : real64();
    } else if (t == T_BCD) {
      let mul: f64 = 1;
      for (let k = 0; k < len; k++) {
        const b = i32(unchecked(T[k]));
        const hi = b >> 4;
        const lo = b & 15;
        if (hi > 9 || lo > 9) return -(2 + i);
        v += f64(hi * 10 + lo) * mul;
        mul *= 100;
      }
    }
    unchecked((FVAL[i] = v));
    pos += len;
  }
  return 0;
}

function tb(k: i32): i32 {
  return i32(unchecked(T[k]));
}

function real32(): f64 {
  const sign = tb(3) >> 7;
  const e = ((tb(3) & 0x7f) << 1) | (tb(2) >> 7);
  const m = f64(((tb(2) & 0x7f) << 16) | (tb(1) << 8) | tb(0));
  let v: f64 = 0;
  if (e == 0) v = m * Math.pow(2, -149);
  else if (e == 255) v = m != 0 ? NaN : Infinity;
  else v = (m + 8388608) * Math.pow(2, f64(e - 150));
  return sign != 0 ? -v : v;
}

function real64(): f64 {
  const sign = tb(7) >> 7;
  const e = ((tb(7) & 0x7f) << 4) | (tb(6) >> 4);
  const hi = f64(((tb(6) & 15) << 16) | (tb(5) << 8) | tb(4));
  const lo = f64(tb(3)) * 16777216 + f64((tb(2) << 16) | (tb(1) << 8) | tb(0));
  const m = hi * 4294967296 + lo;
  let v: f64 = 0;
  if (e == 0) v = m * Math.pow(2, -1074);
  else if (e == 2047) v = m != 0 ? NaN : Infinity;
  else v = (m + 4503599627370496) * Math.pow(2, f64(e - 1075));
  return sign != 0 ? -v : v;
}
