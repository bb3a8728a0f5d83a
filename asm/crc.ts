// EN 13757 CRC-16 (polynomial 0x3D65, init 0, result complemented).
import { F } from "./state";

const TABLE = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let c: i32 = i << 8;
  for (let k = 0; k < 8; k++) {
    c = (c & 0x8000) != 0 ? ((c << 1) ^ 0x3d65) & 0xffff : (c << 1) & 0xffff;
  }
  unchecked((TABLE[i] = u16(c)));
}

export function crc16(buf: Uint8Array, off: i32, len: i32): i32 {
  let c: i32 = 0;
  for (let i = 0; i < len; i++) {
    c = ((c << 8) & 0xffff) ^ i32(unchecked(TABLE[((c >> 8) ^ i32(unchecked(buf[off + i]))) & 0xff]));
  }
  return c ^ 0xffff;
}

export function crcFrame(off: i32, len: i32): i32 {
  return crc16(F, off, len);
}
