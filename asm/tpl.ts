// Transport layer: CI 78 (none), 7A (short), 72 (long) and the security
// modes 5 (AES-CBC, IV from M, A, ACC) and 7 (AES-CBC zero IV, CMAC KDF).
import { F, IVB, S_TPL_CI, S_ACC, S_ST, S_CF, S_SEC, S_NBLK, S_END, S_REASON, S_SCHEME, S_CIPH_OFF, S_CIPH_LEN, S_PREDEC, S_POS, S_ENCRYPTED, S_M, S_DLL_ID, S_DLL_VER, S_DLL_TYPE, S_MAC_DATA_OFF, S_AFL_CTR_OFF, S_MAC_OFF, S_MCL_OFF, S_TPL_OFF, S_DIEHL, S_ENCR_SHORT, E_TRUNCATED_HEADER, E_SEC_MODE, E_UNSUPPORTED_CI, E_COMPACT_FRAME, E_MFCT_CI, E_ENCR_LEN, E_AFL, get, set, fb } from "./state";
import { setPrinted } from "./link";
import { NEED } from "./ell";
import { diehlRealData, DI_REAL_DATA } from "./mfct";

export const UNDECODABLE: i32 = -3;

function setIvFromTpl(pos: i32, longHdr: bool): void {
  if (longHdr) {
    // long header sends id, M, version, type; the IV wants M first
    unchecked((IVB[0] = F[pos + 5]));
    unchecked((IVB[1] = F[pos + 6]));
    for (let i = 0; i < 4; i++) unchecked((IVB[2 + i] = F[pos + 1 + i]));
    unchecked((IVB[6] = F[pos + 7]));
    unchecked((IVB[7] = F[pos + 8]));
  } else {
    const m = get(S_M);
    const id = get(S_DLL_ID);
    unchecked((IVB[0] = u8(m & 0xff)));
    unchecked((IVB[1] = u8(m >> 8)));
    unchecked((IVB[2] = u8(id & 0xff)));
    unchecked((IVB[3] = u8((id >> 8) & 0xff)));
    unchecked((IVB[4] = u8((id >> 16) & 0xff)));
    unchecked((IVB[5] = u8((id >> 24) & 0xff)));
    unchecked((IVB[6] = u8(get(S_DLL_VER))));
    unchecked((IVB[7] = u8(get(S_DLL_TYPE))));
  }
}

/** pos at the TPL CI. Returns the start of the application data, -1 invalid, UNDECODABLE, or NEED. */
export function tplLayer(pos: i32): i32 {
  const ci = fb(pos);
  const end = get(S_END);
  set(S_TPL_CI, ci);
  set(S_TPL_OFF, pos);
  if (ci == 0x78) return pos + 1;
  if (ci == 0x79) return pos + 1; // compact frame, no TPL header (asm/compact.ts)
  if (ci >= 0xa0 && ci <= 0xb7) {
    set(S_REASON, E_MFCT_CI);
    return UNDECODABLE;
  }
  let longHdr = false;
  let hl: i32 = 0;
  if (ci == 0x7a || ci == 0x7b) hl = 5;
  else if (ci == 0x72 || ci == 0x73) {
    hl = 13;
    longHdr = true;
  } else {
    set(S_REASON, E_UNSUPPORTED_CI);
    return UNDECODABLE;
  }
  if (pos + hl > end) {
    set(S_REASON, E_TRUNCATED_HEADER);
    return -1;
  }
  if (longHdr) setPrinted(pos + 1, fb(pos + 5) | (fb(pos + 6) << 8), fb(pos + 7), fb(pos + 8));
  const acc = fb(pos + hl - 4);
  set(S_ACC, acc);
  set(S_ST, fb(pos + hl - 3));
  const cf = fb(pos + hl - 2) | (fb(pos + hl - 1) << 8);
  set(S_CF, cf);
  const mode = (cf >> 8) & 0x1f;
  set(S_SEC, mode);
  let app = pos + hl;
  if (mode == 0) return app;
  if (ci == 0x7a && pos == 10 && get(S_DIEHL) == DI_REAL_DATA) {
    // Diehl REAL_DATA: LFSR-scrambled records instead of an OMS security mode
    set(S_ENCRYPTED, 1);
    diehlRealData();
    return app;
  }
  set(S_ENCRYPTED, 1);
  if (mode == 7) {
    if (app + 1 > end) {
      set(S_REASON, E_TRUNCATED_HEADER);
      return -1;
    }
    app += 1; // configuration field extension (KDF selection)
  }
  const nb = (cf >> 4) & 15;
  set(S_NBLK, nb);
  let clen = nb * 16;
  if (nb == 0) clen = (end - app) & ~15;
  if (app + clen > end) {
    // fewer bytes than the configuration field's N blocks (a shortened telegram): in mode 5
    // the whole blocks that did arrive are decrypted (the 2F2F check still verifies the key)
    // and a partial block at the end is dropped; mode 7's MAC covers the frame as sent
    const whole = (end - app) & ~15;
    if (mode != 5 || whole < 16) {
      set(S_REASON, E_ENCR_LEN);
      return -1;
    }
    clen = whole;
    set(S_END, app + clen);
    set(S_ENCR_SHORT, nb * 16 - clen);
  }
  const predec = app + 2 <= end && fb(app) == 0x2f && fb(app + 1) == 0x2f;
  set(S_PREDEC, predec ? 1 : 0);
  set(S_CIPH_OFF, app);
  set(S_CIPH_LEN, clen);
  set(S_POS, app);
  if (mode == 5) {
    setIvFromTpl(pos, longHdr);
    for (let i = 8; i < 16; i++) unchecked((IVB[i] = u8(acc)));
    set(S_SCHEME, 1);
    return NEED;
  }
  if (mode == 7) {
    const ctr = get(S_AFL_CTR_OFF);
    if (ctr < 0 || get(S_MAC_OFF) < 0 || get(S_MCL_OFF) < 0) {
      if (predec) return app;
      set(S_REASON, E_AFL);
      return UNDECODABLE;
    }
    // KDF input: 00 | AFL counter | id (long TPL's if CI 72, else DLL's) | 07 x 7
    unchecked((IVB[0] = 0));
    for (let i = 0; i < 4; i++) unchecked((IVB[1 + i] = F[ctr + i]));
    if (longHdr) {
      for (let i = 0; i < 4; i++) unchecked((IVB[5 + i] = F[pos + 1 + i]));
    } else {
      const id = get(S_DLL_ID);
      unchecked((IVB[5] = u8(id & 0xff)));
      unchecked((IVB[6] = u8((id >> 8) & 0xff)));
      unchecked((IVB[7] = u8((id >> 16) & 0xff)));
      unchecked((IVB[8] = u8((id >> 24) & 0xff)));
    }
    for (let i = 9; i < 16; i++) unchecked((IVB[i] = 7));
    set(S_MAC_DATA_OFF, pos);
    set(S_SCHEME, 2);
    return NEED;
  }
  if (predec) return app;
  set(S_REASON, E_SEC_MODE + mode); // e.g. the DES modes 2 and 3, AES-CTR 8, AES-GCM 9
  return UNDECODABLE;
}
