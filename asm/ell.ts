// Extended link layer, CI 8C-8F (EN 13757-4), with AES-128-CTR session encryption.
import { F, IVB, S_ELL_CI, S_ELL_CC, S_ELL_ACC, S_ELL_SN, S_END, S_REASON, S_SCHEME, S_CIPH_OFF, S_CIPH_LEN, S_PREDEC, S_POS, S_ENCRYPTED, S_M, S_DLL_ID, S_DLL_VER, S_DLL_TYPE, S_ELL_CRC_OFF, E_TRUNCATED_HEADER, E_UNSUPPORTED_SEC, get, set, fb } from "./state";
import { u32le, setPrinted } from "./link";
import { crc16 } from "./crc";

export const NEED: i32 = -2;

/** pos at CI. Returns next CI position, -1 error, NEED when the host must decrypt. */
export function ellLayer(pos: i32): i32 {
  const ci = fb(pos);
  const end = get(S_END);
  let hl: i32 = 3;
  if (ci == 0x8d) hl = 9;
  else if (ci == 0x8e) hl = 11;
  else if (ci == 0x8f) hl = 17;
  if (pos + hl > end) {
    set(S_REASON, E_TRUNCATED_HEADER);
    return -1;
  }
  set(S_ELL_CI, ci);
  set(S_ELL_CC, fb(pos + 1));
  set(S_ELL_ACC, fb(pos + 2));
  let snPos: i32 = -1;
  if (ci == 0x8d) snPos = pos + 3;
  if (ci == 0x8e || ci == 0x8f) {
    setPrinted(pos + 5, fb(pos + 3) | (fb(pos + 4) << 8), fb(pos + 9), fb(pos + 10));
    if (ci == 0x8f) snPos = pos + 11;
  }
  if (snPos < 0) return pos + hl;
  set(S_ELL_SN, u32le(snPos));
  const enc = fb(snPos + 3) >> 5;
  const crcOff = snPos + 4;
  set(S_ELL_CRC_OFF, crcOff);
  if (enc == 0) return pos + hl;
  if (enc != 1) {
    set(S_REASON, E_UNSUPPORTED_SEC);
    return -1;
  }
  set(S_ENCRYPTED, 1);
  // counter block: DLL M(2) | DLL A(6) | CC & ~0x12 | SN(4) | FN 00 00 | BC 00
  const m = get(S_M);
  unchecked((IVB[0] = u8(m & 0xff)));
  unchecked((IVB[1] = u8(m >> 8)));
  const id = get(S_DLL_ID);
  unchecked((IVB[2] = u8(id & 0xff)));
  unchecked((IVB[3] = u8((id >> 8) & 0xff)));
  unchecked((IVB[4] = u8((id >> 16) & 0xff)));
  unchecked((IVB[5] = u8((id >> 24) & 0xff)));
  unchecked((IVB[6] = u8(get(S_DLL_VER))));
  unchecked((IVB[7] = u8(get(S_DLL_TYPE))));
  unchecked((IVB[8] = u8(fb(pos + 1) & ~0x12)));
  for (let i = 0; i < 4; i++) unchecked((IVB[9 + i] = F[snPos + i]));
  unchecked((IVB[13] = 0));
  unchecked((IVB[14] = 0));
  unchecked((IVB[15] = 0));
  set(S_SCHEME, 3);
  set(S_CIPH_OFF, crcOff);
  set(S_CIPH_LEN, end - crcOff);
  set(S_PREDEC, ellCrcOk() ? 1 : 0);
  set(S_POS, pos + hl);
  return NEED;
}

/** EN 13757 CRC over the plaintext after the payload CRC, sent low byte first. */
export function ellCrcOk(): bool {
  const off = get(S_ELL_CRC_OFF);
  const end = get(S_END);
  if (off + 2 > end) return false;
  const c = crc16(F, off + 2, end - off - 2);
  return (fb(off) | (fb(off + 1) << 8)) == c;
}
