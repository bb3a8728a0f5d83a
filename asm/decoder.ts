// Telegram decoder driver: frame -> link -> ELL/AFL -> TPL -> records -> selection.
// Encryption is delegated to the host (node:crypto in the worker): begin()
// returns R_NEED_CRYPTO with S_SCHEME, S_CIPH_OFF, S_CIPH_LEN and IVB set; the
// host writes the plaintext into F and calls resume(1), or resume(2) to accept
// bytes that already look plain (predecrypted frames).
import { CTRL, F, S_SCHEME, S_POS, S_CIPH_OFF, S_REASON, S_ST, S_SEL, S_AFL_CTR_OFF, S_MAC_OFF, S_MCL_OFF, S_ERRFLAGS, S_ELL_CRC_OFF, S_NCI, S_CI0, S_END, S_APP_OFF, S_DECRYPTED, S_FLEN, S_FRAME_END, S_TPL_CI, S_TYPE, R_OK, R_NEED_CRYPTO, R_INVALID, R_UNDECODABLE, E_NOT_HEX, E_ODD_HEX, E_TOO_LONG, E_TOO_SHORT, E_WRONG_KEY, E_ELL_CRC, E_NO_REGISTER, E_RECORD_TRUNCATED, get, set, fb } from "./state";
import { hexToFrame } from "./hex";
import { frameLayer } from "./frames";
import { linkLayer } from "./link";
import { ellLayer, ellCrcOk, NEED } from "./ell";
import { aflLayer } from "./afl";
import { tplLayer, UNDECODABLE } from "./tpl";
import { parseRecords } from "./difvif";
import { selectRegister } from "./select";
import { expandCompact, learnFormat } from "./compact";
import { enhancedId, mfctAfterCrypto, mfctFrame, mfctRecordsFirst, mfctRecordsFallback } from "./mfct";

function reset(): void {
  for (let i = 0; i < 64; i++) unchecked((CTRL[i] = 0));
  set(S_ST, -1);
  set(S_SEL, -1);
  set(S_AFL_CTR_OFF, -1);
  set(S_MAC_OFF, -1);
  set(S_MCL_OFF, -1);
  set(S_ERRFLAGS, -1);
  set(S_ELL_CRC_OFF, -1);
}

/** Decodes len ASCII hex characters placed in IN. */
export function begin(len: i32): i32 {
  reset();
  const n = hexToFrame(len);
  if (n < 0) {
    set(S_REASON, n == -1 ? E_NOT_HEX : n == -2 ? E_ODD_HEX : E_TOO_LONG);
    return R_INVALID;
  }
  return beginBytes(n);
}

/**
 * While `inspect` runs: the host's batch check needs the layers that can refuse a frame and
 * the identifier, not the application records (parsed again where the telegram is decoded).
 */
let inspecting = false;

/**
 * `begin` for the host's synchronous batch check: the same verdicts on the frame and the same
 * identifier, but it stops where the application records start, unless the identifier is in
 * them (device type 0x37: an enhanced identification record, `enhancedId`).
 */
export function inspect(len: i32): i32 {
  inspecting = true;
  const r = begin(len);
  inspecting = false;
  return r;
}

/** Decodes n frame bytes already placed in F. */
export function beginBytes(n: i32): i32 {
  if (get(S_FLEN) != n) set(S_FLEN, n);
  const m = frameLayer(n);
  if (m < 0) return R_INVALID;
  set(S_FRAME_END, get(S_END));
  const pos = linkLayer(m);
  if (pos < 0) return R_INVALID;
  return run(pos);
}

function run(p: i32): i32 {
  let pos = p;
  const end = get(S_END);
  for (let guard = 0; guard < 8; guard++) {
    if (pos >= end) {
      set(S_REASON, E_TOO_SHORT);
      return R_INVALID;
    }
    const ci = fb(pos);
    const nci = get(S_NCI);
    if (nci < 4) set(S_CI0 + nci, ci);
    set(S_NCI, nci + 1);
    let r: i32 = 0;
    if (ci >= 0x8c && ci <= 0x8f) {
      r = ellLayer(pos);
      if (r == NEED) return R_NEED_CRYPTO;
      if (r < 0) return R_INVALID;
      pos = r;
      continue;
    }
    if (ci == 0x90) {
      r = aflLayer(pos);
      if (r < 0) return R_INVALID;
      pos = r;
      continue;
    }
    if (ci >= 0xa0 && ci <= 0xb7) return mfctFrame(pos);
    r = tplLayer(pos);
    if (r == NEED) return R_NEED_CRYPTO;
    if (r == UNDECODABLE) return R_UNDECODABLE;
    if (r < 0) return R_INVALID;
    return app(r);
  }
  set(S_REASON, E_TOO_SHORT);
  return R_INVALID;
}

function app(p0: i32): i32 {
  let pos = p0;
  set(S_APP_OFF, pos);
  if (inspecting && get(S_TYPE) != 0x37) return R_OK;
  const tci = get(S_TPL_CI);
  const compact = tci == 0x79 || tci == 0x7b || tci == 0x73;
  if (compact) {
    pos = expandCompact(pos);
    if (pos < 0) return R_UNDECODABLE;
  }
  const end = get(S_END);
  const st = parseRecords(pos, end);
  if (!compact && st == 0 && (tci == 0x78 || tci == 0x7a || tci == 0x72)) learnFormat();
  enhancedId();
  if (mfctRecordsFirst(pos, end)) return R_OK;
  selectRegister();
  if (get(S_SEL) < 0 && mfctRecordsFallback()) return R_OK;
  if (get(S_SEL) < 0) {
    if (st < 0) return R_UNDECODABLE; // reason set by the record walk
    set(S_REASON, E_NO_REGISTER);
    return R_UNDECODABLE;
  }
  if (st < 0 && get(S_REASON) == E_RECORD_TRUNCATED) set(S_REASON, 0);
  return R_OK;
}

/** mode 1: the host decrypted in place; mode 2: accept the bytes as plain. */
export function resume(mode: i32): i32 {
  const scheme = get(S_SCHEME);
  set(S_SCHEME, 0);
  if (scheme == 0) return R_INVALID;
  if (scheme == 4) {
    if (mode != 1) return R_INVALID;
    set(S_DECRYPTED, 1);
    return mfctAfterCrypto();
  }
  if (mode == 1) {
    set(S_DECRYPTED, 1);
    if (scheme == 3) {
      if (!ellCrcOk()) {
        set(S_REASON, E_ELL_CRC);
        return R_UNDECODABLE;
      }
    } else {
      const off = get(S_CIPH_OFF);
      if (off + 2 > get(S_END) || fb(off) != 0x2f || fb(off + 1) != 0x2f) {
        set(S_REASON, E_WRONG_KEY);
        return R_UNDECODABLE;
      }
    }
  }
  if (scheme == 3) return run(get(S_POS));
  return app(get(S_POS));
}

export function frameByte(i: i32): i32 {
  return i32(unchecked(F[i & 4095]));
}
