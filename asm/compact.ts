// Compact frames (CI 79, 7B, 73): the payload is format signature (2 bytes,
// LE), data CRC (2 bytes), then only the data of the records. The signature
// is the EN 13757 CRC-16 of the record headers (DIF, DIFEs, VIF, VIFEs) of a
// full frame the same meter sent before. Formats learnt from full frames are
// kept per meter (id, manufacturer, signature) in a fixed table of FMT_N
// entries, 8-way set associative: a key hashes to one set of 8, where it is
// looked for and where the least recently used entry makes room. (A table of
// 64 searched whole held fewer meters than one worker serves: each full frame
// was learnt again and announced, each compact frame missed.) Each format is
// kept a second time under the identity PEER, the latest of its manufacturer
// and signature: what a compact frame of a meter not seen yet may borrow. The
// table lives in this module's memory, so it carries over between calls on
// the same decoder instance (one per pool worker). Entries are also scoped: the host
// sets the scope (its tenant) before each telegram, so one tenant's frames never
// define how another's compact frames are read.
//
// The host shares the table beyond this instance: a newly stored entry is announced
// in S_FMT_NEW (slot + 1) with its signature in S_FMT_SIG, an unknown signature in
// S_FMT_MISS / S_FMT_SIG; fmtRead copies an entry out and fmtPut takes one in.
import { F, REC, REC_W, S_NREC, S_ID, S_ID_M, S_TYPE, S_M, S_DLL_TYPE, S_END, S_REASON, S_APP_OFF, S_FMT_NEW, S_FMT_SIG, S_FMT_MISS, S_FMT_SRC, S_FMT_DCRC, R_DIF, R_VIF, R_HDR_OFF, R_DATA_OFF, E_COMPACT_FRAME, get, set, fb } from "./state";
import { crc16 } from "./crc";

const WAYS: i32 = 8;
const SET_BITS: i32 = 12;
export const FMT_N: i32 = WAYS << SET_BITS; // meters x formats remembered (32,768)
const FMT_MAX: i32 = 96; // bytes per format: per record 1 length byte + header bytes

const K_SCOPE = new Int32Array(FMT_N);
const K_ID = new Int32Array(FMT_N);
const K_M = new Int32Array(FMT_N);
const K_SIG = new Int32Array(FMT_N);
const K_LEN = new Int32Array(FMT_N); // 0 = free slot
const K_AGE = new Int32Array(FMT_N);
const FB = new Uint8Array(FMT_N * FMT_MAX);
const HDR = new Uint8Array(96); // headers only, for the signature
const TMP = new Uint8Array(96); // one format: per record, length byte + header bytes
let clock: i32 = 0;

// Well-known formats (the host loads them from src/decode/known-formats.ts at start):
// key = manufacturer + device type + signature, for meters that send compact frames
// long before (or without) a full frame. Same entry layout as the learnt table.
export const KNOWN_N: i32 = 128;
const KN_M = new Int32Array(128);
const KN_TYPE = new Int32Array(128);
const KN_SIG = new Int32Array(128);
const KN_LEN = new Int32Array(128); // 0 = free
const KN_FB = new Uint8Array(128 * 96);
let knownCount: i32 = 0;

// Where a compact frame's format came from (S_FMT_SRC)
export const FS_METER: i32 = 1; // learnt from this meter's full frame
export const FS_KNOWN: i32 = 2; // well-known format table
export const FS_PEER: i32 = 3; // learnt from another meter of the same manufacturer, data CRC verified
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
  store(PEER, get(S_ID_M), sig, tl);
  if (slot >= 0) {
    set(S_FMT_NEW, slot + 1);
    set(S_FMT_SIG, sig);
  }
}

// The identity of the peer entries: FFFFFFFF is the wM-Bus wildcard address, no meter's.
const PEER: i32 = -1;

/** The first entry of the set where (scope, id, m, sig) is kept. */
function setOf(id: i32, m: i32, sig: i32): i32 {
  let h = id * 0x9e3779b1;
  h ^= (m << 16 | sig) * 0x85ebca77;
  h ^= scope * 0xc2b2ae3d;
  h ^= h >>> 15;
  h *= 0x27d4eb2f;
  return (h >>> (32 - SET_BITS)) * WAYS;
}

/**
 * Keeps TMP[0, tl) as the format of (scope, id, m, sig); returns the slot when it was
 * not known yet, -1 when it was (then it is only refreshed).
 */
function store(id: i32, m: i32, sig: i32, tl: i32): i32 {
  clock++;
  let slot: i32 = -1;
  let oldest: i32 = 0;
  const first = setOf(id, m, sig);
  for (let e = first; e < first + WAYS; e++) {
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
  store(PEER, m, sig, tl);
  return 0;
}

/**
 * Takes well-known format headers, TMP[0, hl) as plain DIF/VIF bytes (no length bytes),
 * for manufacturer m and device type `type`: splits them into records, computes the
 * signature and keeps them. Returns the signature, or -1 when the bytes are not a
 * sequence of fixed-length record headers or the table is full.
 */
export function knownPut(m: i32, type: i32, hl: i32): i32 {
  if (hl <= 0 || hl > FMT_MAX || knownCount >= KNOWN_N) return -1;
  for (let i = 0; i < hl; i++) unchecked((HDR[i] = TMP[i]));
  const slot = knownCount;
  const base = slot * FMT_MAX;
  let k: i32 = 0; // read position in HDR
  let w: i32 = 0; // write position in the entry
  while (k < hl) {
    const start = k;
    const dif = i32(unchecked(HDR[k]));
    if (dataLen(dif) < 0) return -1;
    let b = dif;
    k++;
    while ((b & 0x80) != 0) {
      if (k >= hl || k - start > 11) return -1;
      b = i32(unchecked(HDR[k++]));
    }
    if (k >= hl) return -1;
    const vif = i32(unchecked(HDR[k]));
    if ((vif & 0x7f) == 0x7c) return -1; // plain-text VIF: variable length
    b = vif;
    k++;
    while ((b & 0x80) != 0) {
      if (k >= hl || k - start > 19) return -1;
      b = i32(unchecked(HDR[k++]));
    }
    const len = k - start;
    if (w + 1 + len > FMT_MAX) return -1;
    unchecked((KN_FB[base + w++] = u8(len)));
    for (let i = start; i < k; i++) unchecked((KN_FB[base + w++] = HDR[i]));
  }
  const sig = crc16(HDR, 0, hl);
  unchecked((KN_M[slot] = m));
  unchecked((KN_TYPE[slot] = type));
  unchecked((KN_SIG[slot] = sig));
  unchecked((KN_LEN[slot] = w));
  knownCount++;
  return sig;
}

function findKnown(m: i32, type: i32, sig: i32): i32 {
  for (let e = 0; e < knownCount; e++) {
    if (unchecked(KN_SIG[e]) == sig && unchecked(KN_M[e]) == m && unchecked(KN_TYPE[e]) == type) return e;
  }
  return -1;
}

/**
 * Rebuilds the records of the format in `buf` at `base` (length fl) behind the frame:
 * headers from the format, data from the frame at d. Returns the end of the rebuilt
 * records, or -1 when the data does not fit. The data CRC check result goes to S_FMT_DCRC
 * (1 matches, 2 differs: the CRC-16 of the rebuilt records, sent low byte first).
 */
function rebuild(buf: Uint8Array, base: i32, fl: i32, d0: i32, out0: i32, dcrc: i32): i32 {
  const end = get(S_END);
  let d = d0;
  let q = out0;
  let k: i32 = 0;
  while (k < fl) {
    const hl = i32(unchecked(buf[base + k]));
    k++;
    if (hl <= 0 || k + hl > fl) return -1;
    const dl = dataLen(i32(unchecked(buf[base + k])));
    if (dl < 0 || d + dl > end || q + hl + dl > 4096) return -1;
    for (let i = 0; i < hl; i++) unchecked((F[q++] = buf[base + k + i]));
    k += hl;
    for (let i = 0; i < dl; i++) unchecked((F[q++] = F[d++]));
  }
  set(S_FMT_DCRC, crc16(F, out0, q - out0) == dcrc ? 1 : 2);
  return q;
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
  const dcrc = fb(p + 2) | (fb(p + 3) << 8);
  const id = get(S_ID);
  const m = get(S_ID_M);
  const out0 = end;
  set(S_FMT_SIG, sig);
  // 1. this meter's own format
  const first = setOf(id, m, sig);
  for (let e = first; e < first + WAYS; e++) {
    if (unchecked(K_LEN[e]) != 0 && unchecked(K_SCOPE[e]) == scope && unchecked(K_ID[e]) == id && unchecked(K_M[e]) == m && unchecked(K_SIG[e]) == sig) {
      unchecked((K_AGE[e] = ++clock));
      return done(rebuild(FB, e * FMT_MAX, unchecked(K_LEN[e]), p + 4, out0, dcrc), out0, FS_METER);
    }
  }
  // 2. the well-known format of this manufacturer and device type (DLL first, then the printed address)
  let kn = findKnown(get(S_M), get(S_DLL_TYPE), sig);
  if (kn < 0) kn = findKnown(m, get(S_TYPE), sig);
  if (kn >= 0) return done(rebuild(KN_FB, kn * FMT_MAX, unchecked(KN_LEN[kn]), p + 4, out0, dcrc), out0, FS_KNOWN);
  // 3. a format another meter of this manufacturer taught (same scope), only when the data CRC agrees
  const peers = setOf(PEER, m, sig);
  for (let e = peers; e < peers + WAYS; e++) {
    if (unchecked(K_LEN[e]) != 0 && unchecked(K_SCOPE[e]) == scope && unchecked(K_ID[e]) == PEER && unchecked(K_M[e]) == m && unchecked(K_SIG[e]) == sig) {
      const q = rebuild(FB, e * FMT_MAX, unchecked(K_LEN[e]), p + 4, out0, dcrc);
      if (q >= 0 && get(S_FMT_DCRC) == 1) return done(q, out0, FS_PEER);
    }
  }
  set(S_FMT_DCRC, 0);
  set(S_REASON, E_COMPACT_FRAME);
  set(S_FMT_MISS, 1);
  return -1;
}

function done(q: i32, out0: i32, src: i32): i32 {
  if (q < 0) {
    set(S_REASON, E_COMPACT_FRAME);
    return -1;
  }
  set(S_FMT_SRC, src);
  set(S_END, q);
  set(S_APP_OFF, out0);
  return out0;
}
