// Compact frames (CI 79, 7B, 73): the payload is format signature (2 bytes,
// LE), data CRC (2 bytes), then only the data of the records. The signature
// is the EN 13757 CRC-16 of the record headers (DIF, DIFEs, VIF, VIFEs) of a
// full frame the same meter sent before. Formats learnt from full frames are
// kept per meter (id, manufacturer, signature) in a fixed table of FMT_N
// entries; the least recently used entry is replaced when it is full. The
// table lives in this module's memory, so it carries over between calls on
// the same decoder instance (one per pool worker). Entries are also scoped: the host
// sets the scope (its tenant) before each telegram, so one tenant's frames never
// define how another's compact frames are read.
//
// The host shares the table beyond this instance: a newly stored entry is announced
// in S_FMT_NEW (slot + 1) with its signature in S_FMT_SIG, an unknown signature in
// S_FMT_MISS / S_FMT_SIG; fmtRead copies an entry out and fmtPut takes one in.
import { F, REC, REC_W, S_NREC, S_ID, S_ID_M, S_END, S_REASON, S_APP_OFF, S_FMT_NEW, S_FMT_SIG, S_FMT_MISS, R_DIF, R_VIF, R_HDR_OFF, R_DATA_OFF, E_COMPACT_FRAME, get, set, fb } from "./state";
import { crc16 } from "./crc";

export const FMT_N: i32 = 64; // meters x formats remembered
const FMT_MAX: i32 = 96; // bytes per format: per record 1 length byte + header bytes

const K_SCOPE = new Int32Array(64);
const K_ID = new Int32Array(64);
const K_M = new Int32Array(64);
const K_SIG = new Int32Array(64);
const K_LEN = new Int32Array(64); // 0 = free slot
const K_AGE = new Int32Array(64);
const FB = new Uint8Array(64 * 96);
const HDR = new Uint8Array(96); // headers only, for the signature
const TMP = new Uint8Array(96); // one format: per record, length byte + header bytes
let clock: i32 = 0;
let scope: i32 = 0;

/** Scope of the telegrams that follow (the host's tenant). */
export function fmtScope(s: i32): void {
  scope = s;
}

/** Address of TMP, where fmtRead leaves a format and fmtPut takes one. */
export function fmtTmpPtr(): usize {
  return TMP.dataStart;
}

function dataLen(dif: i32): i32 {
  const t = dif & 15;
  if (t == 0 || t == 8) return 0;
  if (t <= 4) return t;
  if (t == 5) return 4;
  if (t == 6 || t == 14) return 6;
  if (t == 7) return 8;
  if (t >= 9 && t <= 12) return t - 8;
  return -1; // 0D variable length, 0F/1F special: not representable
}

/** Remembers the record headers of a full frame just parsed. */
export function learnFormat(): void {
  const n = get(S_NREC);
  if (n <= 0) return;
  let tl: i32 = 0;
  let hl: i32 = 0;
  for (let i = 0; i < n; i++) {
    const o = i * REC_W;
    const dif = i32(unchecked(REC[o + R_DIF]));
    const vc = i32(unchecked(REC[o + R_VIF]));
    if (vc >= 0x300 || dataLen(dif) < 0) return; // plain text, special DIF, variable length
    const h = i32(unchecked(REC[o + R_HDR_OFF]));
    const len = i32(unchecked(REC[o + R_DATA_OFF])) - h;
    if (len <= 0 || len > 20 || tl + 1 + len > FMT_MAX) return;
    unchecked((TMP[tl++] = u8(len)));
    for (let k = 0; k < len; k++) {
      const b = unchecked(F[h + k]);
      unchecked((TMP[tl++] = b));
      unchecked((HDR[hl++] = b));
    }
  }
  const sig = crc16(HDR, 0, hl);
  const slot = store(get(S_ID), get(S_ID_M), sig, tl);
  if (slot >= 0) {
    set(S_FMT_NEW, slot + 1);
    set(S_FMT_SIG, sig);
  }
}

/**
 * Keeps TMP[0, tl) as the format of (scope, id, m, sig); returns the slot when it was
 * not known yet, -1 when it was (then it is only refreshed).
 */
function store(id: i32, m: i32, sig: i32, tl: i32): i32 {
  clock++;
  let slot: i32 = -1;
  let oldest: i32 = 0;
  for (let e = 0; e < FMT_N; e++) {
    if (unchecked(K_LEN[e]) != 0 && unchecked(K_SCOPE[e]) == scope && unchecked(K_ID[e]) == id && unchecked(K_M[e]) == m && unchecked(K_SIG[e]) == sig) {
      unchecked((K_AGE[e] = clock));
      return -1;
    }
    if (unchecked(K_LEN[e]) == 0) {
      if (slot < 0 || unchecked(K_LEN[slot]) != 0) slot = e;
    } else if (slot < 0 || (unchecked(K_LEN[slot]) != 0 && unchecked(K_AGE[e]) < oldest)) {
      slot = e;
      oldest = unchecked(K_AGE[e]);
    }
  }
  if (slot < 0) return -1;
  unchecked((K_SCOPE[slot] = scope));
  unchecked((K_ID[slot] = id));
  unchecked((K_M[slot] = m));
  unchecked((K_SIG[slot] = sig));
  unchecked((K_LEN[slot] = tl));
  unchecked((K_AGE[slot] = clock));
  for (let k = 0; k < tl; k++) unchecked((FB[slot * FMT_MAX + k] = TMP[k]));
  return slot;
}

/** Copies the format in `slot` to TMP; returns its length (0 for a free or bad slot). */
export function fmtRead(slot: i32): i32 {
  if (slot < 0 || slot >= FMT_N) return 0;
  const tl = unchecked(K_LEN[slot]);
  for (let k = 0; k < tl; k++) unchecked((TMP[k] = FB[slot * FMT_MAX + k]));
  return tl;
}

/**
 * Takes the format in TMP[0, tl) for (current scope, id, m, sig), as fmtRead gave it
 * out. Returns 0, or -1 when it is not a well-formed format (then nothing is kept).
 */
export function fmtPut(id: i32, m: i32, sig: i32, tl: i32): i32 {
  if (tl <= 0 || tl > FMT_MAX) return -1;
  let k: i32 = 0;
  let hl: i32 = 0;
  while (k < tl) {
    const len = i32(unchecked(TMP[k]));
    if (len <= 0 || len > 20 || k + 1 + len > tl) return -1;
    if (dataLen(i32(unchecked(TMP[k + 1]))) < 0) return -1;
    for (let i = 0; i < len; i++) unchecked((HDR[hl++] = TMP[k + 1 + i]));
    k += 1 + len;
  }
  if (crc16(HDR, 0, hl) != sig) return -1;
  store(id, m, sig, tl);
  return 0;
}

/**
 * Rebuilds a compact frame's records behind the frame in F (headers from the
 * remembered format, data from the frame) and returns [start, end) via the
 * return value start (end in S_END), or -1 when the format is unknown or the
 * data does not fit.
 */
export function expandCompact(pos: i32): i32 {
  let p = pos;
  const end = get(S_END);
  while (p < end && fb(p) == 0x2f) p++;
  if (p + 4 > end) {
    set(S_REASON, E_COMPACT_FRAME);
    return -1;
  }
  const sig = fb(p) | (fb(p + 1) << 8);
  const id = get(S_ID);
  const m = get(S_ID_M);
  let slot: i32 = -1;
  for (let e = 0; e < FMT_N; e++) {
    if (unchecked(K_LEN[e]) != 0 && unchecked(K_SCOPE[e]) == scope && unchecked(K_ID[e]) == id && unchecked(K_M[e]) == m && unchecked(K_SIG[e]) == sig) {
      slot = e;
      break;
    }
  }
  if (slot < 0) {
    set(S_REASON, E_COMPACT_FRAME);
    set(S_FMT_MISS, 1);
    set(S_FMT_SIG, sig);
    return -1;
  }
  unchecked((K_AGE[slot] = ++clock));
  let d = p + 4;
  const out0 = end;
  let q = out0;
  const fl = unchecked(K_LEN[slot]);
  let k: i32 = 0;
  while (k < fl) {
    const hl = i32(unchecked(FB[slot * FMT_MAX + k]));
    k++;
    const dl = dataLen(i32(unchecked(FB[slot * FMT_MAX + k])));
    if (d + dl > end || q + hl + dl > 4096) {
      set(S_REASON, E_COMPACT_FRAME);
      return -1;
    }
    for (let i = 0; i < hl; i++) unchecked((F[q++] = FB[slot * FMT_MAX + k + i]));
    k += hl;
    for (let i = 0; i < dl; i++) unchecked((F[q++] = F[d++]));
  }
  set(S_END, q);
  set(S_APP_OFF, out0);
  return out0;
}
