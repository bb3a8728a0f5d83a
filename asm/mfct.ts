// Manufacturer formats that the generic OMS walk cannot read: rules per
// manufacturer (and device type / version where one manufacturer sends
// several formats), learnt from how wmbusmeters decodes them. Each rule
// appends one synthetic record (the register) and selects it. See
// docs/decoders.md, "Manufacturer formats".
import { F, T, IVB, S_SCHEME, S_CIPH_OFF, S_CIPH_LEN, S_POS, S_PREDEC, S_ACC, R_NEED_CRYPTO, E_WRONG_KEY, REC, REC_W, REC_MAX, S_NREC, S_SEL, S_SEL_KIND, S_M, S_C, S_TYPE, S_VER, S_DLL_ID, S_DLL_VER, S_DLL_TYPE, S_ID, S_ID_M, S_END, S_REASON, S_TPL_CI, S_TPL_OFF, S_DIEHL, S_ENCRYPTED, S_DECRYPTED, E_MFCT_CI, E_NO_REGISTER, R_DIF, R_VIF, R_STORAGE, R_TARIFF, R_SUBUNIT, R_FUNC, R_QTY, R_VALUE, R_DTYPE, R_HDR_OFF, R_DATA_OFF, R_DATA_LEN, R_NVIFE, R_VIFE0, R_MOD, R_TEXT_OFF, R_EXP, D_NUMBER, R_OK, R_UNDECODABLE, get, set, fb } from "./state";
import { primaryVif, lastQty, lastExp, Q_ENERGY_WH, Q_ENERGY_J, Q_VOLUME_M3, Q_HCA } from "./units";

// manufacturer codes (3 letters, 5 bits each)
export const M_APA: i32 = 0x0601;
export const M_APT: i32 = 0x8614; // Apator's older code, with the top bit set as sent
export const M_BFW: i32 = 0x08d7;
export const M_DME: i32 = 0x11a5;
export const M_EWT: i32 = 0x16f4;
export const M_HYD: i32 = 0x2324;
export const M_QDS: i32 = 0x4493;
export const M_SAP: i32 = 0x4c30;
export const M_SPL: i32 = 0x4e0c;
export const M_TCH: i32 = 0x5068;
export const M_ZRI: i32 = 0x6a49;
export const M_IME: i32 = 0x25a5;

// Diehl frame interpretation (S_DIEHL)
export const DI_NA: i32 = 0;
export const DI_OMS: i32 = 1;
export const DI_REAL_DATA: i32 = 2;
export const DI_PRIOS: i32 = 3;
export const DI_SAP_PRIOS: i32 = 4;
export const DI_SAP_PRIOS_STD: i32 = 5;
export const DI_PRIOS_SCR: i32 = 6;
export const DI_RESERVED: i32 = 7;

// PRIOS default keys, folded to 32 bits (first half xor second half)
const PRIOS_KEY1: i32 = 0x39bc8a10 ^ 0xe66d83f8;
const PRIOS_KEY2: i32 = 0x51728910 ^ 0xe66d83f8;

function put(i: i32, f: i32, v: f64): void {
  unchecked((REC[i * REC_W + f] = v));
}

function kindOf(q: i32): i32 {
  if (q == Q_ENERGY_WH || q == Q_ENERGY_J) return 1;
  if (q == Q_VOLUME_M3) return 2;
  if (q == Q_HCA) return 3;
  return 0;
}

/** Appends a register record (value × 10^exp in the quantity's base unit) and selects it. */
export function addRegister(qty: i32, value: f64, exp: i32, off: i32, len: i32): bool {
  const n = get(S_NREC);
  if (n >= REC_MAX) return false;
  put(n, R_DIF, 0);
  put(n, R_VIF, 0x400);
  put(n, R_STORAGE, 0);
  put(n, R_TARIFF, 0);
  put(n, R_SUBUNIT, 0);
  put(n, R_FUNC, 0);
  put(n, R_QTY, f64(qty));
  put(n, R_VALUE, value);
  put(n, R_DTYPE, f64(D_NUMBER));
  put(n, R_HDR_OFF, f64(off));
  put(n, R_DATA_OFF, f64(off));
  put(n, R_DATA_LEN, f64(len));
  put(n, R_NVIFE, 0);
  put(n, R_VIFE0, -1);
  put(n, R_MOD, 0);
  put(n, R_TEXT_OFF, -1);
  put(n, R_EXP, f64(exp));
  set(S_NREC, n + 1);
  set(S_SEL, n);
  set(S_SEL_KIND, kindOf(qty));
  return true;
}

function u32le(p: i32): i32 {
  return fb(p) | (fb(p + 1) << 8) | (fb(p + 2) << 16) | (fb(p + 3) << 24);
}
function u16le(p: i32): i32 {
  return fb(p) | (fb(p + 1) << 8);
}
function u24le(p: i32): i32 {
  return fb(p) | (fb(p + 1) << 8) | (fb(p + 2) << 16);
}
function u32f(p: i32): f64 {
  return f64(u24le(p)) + f64(fb(p + 3)) * 16777216;
}
function u32be(p: i32): i32 {
  return (fb(p) << 24) | (fb(p + 1) << 16) | (fb(p + 2) << 8) | fb(p + 3);
}

/** BCD, len bytes little-endian; -1 when a nibble is not a digit. */
function bcd(p: i32, len: i32): f64 {
  let v: f64 = 0;
  for (let i = len - 1; i >= 0; i--) {
    const b = fb(p + i);
    const hi = b >> 4;
    const lo = b & 15;
    if (hi > 9 || lo > 9) return -1;
    v = v * 100 + f64(hi * 10 + lo);
  }
  return v;
}

// ---------------------------------------------------------------- Diehl

function isDiehl(m: i32): bool {
  return m == M_DME || m == M_EWT || m == M_HYD || m == M_SAP || m == M_SPL;
}

/**
 * Diehl-group frames (C 44/46): the CI at offset 10 and the TPL configuration
 * tell how to read the frame. PRIOS and REAL_DATA frames send the A-field as
 * version, type, id0..id3; SAP PRIOS uses the version byte as part of the id.
 * Called by the link layer on wireless frames (n bytes, no ELL before CI).
 */
export function diehlLink(n: i32): void {
  set(S_DIEHL, DI_NA);
  if (n < 15) return;
  const m = get(S_M);
  if (!isDiehl(m)) return;
  const c = get(S_C);
  if (c != 0x44 && c != 0x46) return;
  const ci = fb(10);
  let di = DI_OMS;
  if (ci == 0x71) di = DI_REAL_DATA;
  else if (ci == 0x7a) di = (fb(14) & 0x10) != 0 ? DI_REAL_DATA : DI_OMS;
  else if (ci >= 0xa0 && ci <= 0xa7) di = m == M_SAP ? DI_SAP_PRIOS : DI_PRIOS;
  else if (ci == 0xb0) di = m == M_SAP ? DI_SAP_PRIOS_STD : DI_RESERVED;
  else if (ci >= 0xb1 && ci <= 0xb3) di = DI_PRIOS_SCR;
  else if (ci >= 0xa8 && ci <= 0xb7) di = DI_RESERVED;
  set(S_DIEHL, di);
  if (di == DI_REAL_DATA || di == DI_PRIOS || di == DI_PRIOS_SCR) {
    const id = u32le(6);
    set(S_DLL_ID, id);
    set(S_DLL_VER, fb(4));
    set(S_DLL_TYPE, fb(5));
    set(S_ID, id);
    set(S_VER, fb(4));
    set(S_TYPE, fb(5));
  } else if (di == DI_SAP_PRIOS) {
    set(S_DLL_VER, 0);
    set(S_DLL_TYPE, 7);
    set(S_VER, 0);
    set(S_TYPE, 7);
  }
}

/**
 * Diehl LFSR descrambling of F[15, end) into T[0, end - 15). The seed is the
 * key xor the original header bytes 2..5, 6..9 and 10..13 (big-endian).
 * check 1: first byte must be 4B (PRIOS); check 2: byte sum & EF must equal
 * F[14] & EF (REAL_DATA). Returns the decoded length or -1.
 */
function lfsr(key0: i32, check: i32): i32 {
  const end = get(S_END);
  const size = end - 15;
  if (size <= 0) return -1;
  let key = key0 ^ u32be(2) ^ u32be(6) ^ u32be(10);
  let sum: i32 = 0;
  for (let i = 0; i < size; i++) {
    for (let j = 0; j < 8; j++) {
      const bit = ((key >> 1) ^ (key >> 2) ^ (key >> 11) ^ (key >>> 31)) & 1;
      key = (key << 1) | bit;
    }
    const d = fb(15 + i) ^ (key & 0xff);
    unchecked((T[i] = u8(d)));
    if (check == 1 && i == 0 && d != 0x4b) return -1;
    sum += d;
  }
  if (check == 2 && (sum & 0xef) != (fb(14) & 0xef)) return -1;
  return size;
}

function lfsrAnyKey(check: i32): i32 {
  let r = lfsr(PRIOS_KEY1, check);
  if (r < 0) r = lfsr(PRIOS_KEY2, check);
  if (r < 0) return -1;
  for (let i = 0; i < r; i++) unchecked((F[15 + i] = T[i]));
  return r;
}

/**
 * REAL_DATA (CI 7A with configuration bit 12): the records after the short
 * header are LFSR-scrambled. When neither default key gives a valid checksum
 * the bytes are taken as already plain (logged after descrambling).
 */
export function diehlRealData(): void {
  if (lfsrAnyKey(2) > 0) set(S_DECRYPTED, 1);
}

// ------------------------------------------------------ proprietary CI A0..B7

/** Frames with a manufacturer-specific CI (pos at the CI). Returns R_OK or R_UNDECODABLE. */
export function mfctFrame(pos: i32): i32 {
  const ci = fb(pos);
  set(S_TPL_CI, ci);
  set(S_TPL_OFF, pos);
  const m = get(S_M);
  const type = get(S_TYPE);
  const ver = get(S_VER);
  const end = get(S_END);
  const p = pos + 1;
  const di = get(S_DIEHL);
  if ((di == DI_PRIOS || di == DI_SAP_PRIOS) && pos == 10) {
    // IZAR / PRIOS: LFSR scrambled, 4B check byte, then the total in litres
    set(S_ENCRYPTED, 1);
    if (lfsrAnyKey(1) >= 5) {
      set(S_DECRYPTED, 1);
      if (addRegister(Q_VOLUME_M3, u32f(16), -3, 16, 4)) return R_OK;
    }
    set(S_REASON, E_MFCT_CI);
    return R_UNDECODABLE;
  }
  if (m == M_TCH && ci >= 0xa0 && ci <= 0xa2) {
    if (type == 0x43 || type == 0x04 || type == 0xc3) {
      // heat meters (compact V / vario): previous period at +3, current period at +7; in kWh,
      // except vario 451 (version 27), which counts in MJ (1/1000 GJ) with u16 registers
      if (ver == 0x27) {
        if (p + 9 <= end && addRegister(Q_ENERGY_J, f64(u16le(p + 3) + u16le(p + 7)), 6, p + 3, 6)) return R_OK;
      } else if (p + 10 <= end && addRegister(Q_ENERGY_WH, f64(u24le(p + 3) + u24le(p + 7)), 3, p + 3, 7)) return R_OK;
    } else if (type == 0x80) {
      // heat cost allocators: current period HCA at +7
      if (p + 9 <= end && addRegister(Q_HCA, f64(u16le(p + 7)), 0, p + 7, 2)) return R_OK;
    } else if (type == 0x62 || type == 0x72) {
      if (ver == 0x50) {
        // total in 0.1 m3, three bytes after the date
        if (p + 7 <= end && addRegister(Q_VOLUME_M3, f64(u24le(p + 4)), -1, p + 4, 3)) return R_OK;
      } else {
        // previous period (at +3) plus current period (at +7), 0.1 m3
        if (p + 9 <= end && addRegister(Q_VOLUME_M3, f64(u16le(p + 3) + u16le(p + 7)), -1, p + 3, 6)) return R_OK;
      }
    }
  }
  if (((m & 0x7fff) == M_APA || m == M_APT) && type == 0x08 && (ci == 0xa0 || ci == 0xb6)) {
    // Apator E-ITN heat cost allocator: A0, season start, 2 bytes, previous period HCA,
    // a date, then the current period HCA (u16 LE at A0 + 8); a B6 frame sends a
    // length-prefixed block before the A0 part
    let a = pos;
    if (ci == 0xb6 && p < end) a = p + 1 + fb(p);
    if (a + 10 <= end && fb(a) == 0xa0 && addRegister(Q_HCA, f64(u16le(a + 8)), 0, a + 8, 2)) return R_OK;
  }
  if (m == M_APA && (ci == 0xa0 || ci == 0xa1) && type == 0x07 && end - (p + 2) == 16) {
    // Apator NA-1: ACC, frame status, then one AES-128-CBC block (IV as in
    // security mode 5: M, A, ACC x 8) holding 2F and the packed total
    set(S_ACC, fb(p));
    set(S_ENCRYPTED, 1);
    unchecked((IVB[0] = u8(m & 0xff)));
    unchecked((IVB[1] = u8(m >> 8)));
    for (let i = 0; i < 6; i++) unchecked((IVB[2 + i] = F[4 + i]));
    for (let i = 8; i < 16; i++) unchecked((IVB[i] = F[p]));
    set(S_PREDEC, 0);
    set(S_CIPH_OFF, p + 2);
    set(S_CIPH_LEN, 16);
    set(S_POS, pos);
    set(S_SCHEME, 4);
    return R_NEED_CRYPTO;
  }
  if (m == M_APT && ci == 0xa0 && p + 4 <= end) {
    // Apator 08 / 172: a 4-byte counter in thirds of the unit (172: m3, others: litres)
    const v = u32f(p) / 3;
    if (addRegister(Q_VOLUME_M3, v, type == 0x11 ? 0 : -3, p, 4)) return R_OK;
  }
  set(S_REASON, E_MFCT_CI);
  return R_UNDECODABLE;
}

/** After the host decrypted a scheme-4 block (Apator NA-1) in place. */
export function mfctAfterCrypto(): i32 {
  const off = get(S_CIPH_OFF);
  if (off + 16 > get(S_END) || fb(off) != 0x2f) {
    set(S_REASON, E_WRONG_KEY);
    return R_UNDECODABLE;
  }
  // packed total: bits 8.. and 0..3 form the count, bits 4..5 a power of ten, in litres
  const raw = u32le(off + 1);
  const count = f64(raw >>> 8) * 16 + f64(raw & 15);
  const e = (raw >> 4) & 3;
  if (addRegister(Q_VOLUME_M3, count, e - 3, off + 1, 4)) return R_OK;
  return noRegister();
}

// ------------------------------------------- manufacturer data inside records

function apator162Size(c: i32): i32 {
  if (c == 0x00) return 4;
  if (c == 0x01) return 3;
  if (c == 0x10 || c == 0xa1) return 4;
  if (c == 0x11) return 2;
  if (c == 0x40) return 6;
  if (c == 0x41) return 2;
  if (c == 0x42) return 4;
  if (c == 0x43) return 2;
  if (c == 0x44) return 3;
  if (c == 0x71) return 9;
  if (c == 0x72) return 13;
  if (c == 0x73) return 17;
  if (c == 0x75) return 25;
  if (c == 0x7b) return 49;
  if (c >= 0x80 && c <= 0x84) return 10;
  if (c == 0x86 || c == 0x87) return 10;
  if (c == 0x85 || c == 0x88 || c == 0x8f) return 11;
  if (c == 0x8a) return 9;
  if (c == 0x8b || c == 0x8c) return 6;
  if (c == 0x8e) return 7;
  if (c == 0xa0) return 4;
  if (c == 0xa2) return 1;
  if (c == 0xa3) return 7;
  if (c == 0xa4) return 4;
  if (c == 0xa5 || c == 0xa9 || c == 0xaf) return 1;
  if (c == 0xa6) return 3;
  if (c == 0xa7 || c == 0xa8 || (c >= 0xaa && c <= 0xad)) return 2;
  if (c == 0xb0) return 5;
  if (c == 0xb1 || c == 0xb3) return 8;
  if (c == 0xb2 || c == 0xb5) return 16;
  if (c == 0xb4) return 2;
  if (c >= 0xb6 && c <= 0xc7) return 3;
  if (c == 0xd0 || c == 0xd3) return 3;
  if (c == 0xf0) return 4;
  return -1;
}

/**
 * Rules that read the application data before (or instead of) the generic
 * selection. pos: start of the application data. Returns true when a
 * register was selected.
 */
export function mfctRecordsFirst(pos: i32, end: i32): bool {
  const m = get(S_M);
  let p = pos;
  while (p < end && fb(p) == 0x2f) p++;
  const apa162 = get(S_VER) == 0x05 && (get(S_TYPE) == 0x06 || get(S_TYPE) == 0x07);
  if (m == M_APA && p < end && (fb(p) == 0x0f || apa162)) {
    // Apator 162 (APA version 05, water; or any APA payload opening with 0F):
    // 8 bytes (0F, date, faults), then registers tagged by one byte;
    // 10 = total volume in litres (4 bytes); FF ends the data
    let i = p + 8;
    let found = -1;
    while (i < end) {
      const c = fb(i);
      if (c == 0xff) break;
      const size = apator162Size(c);
      i++;
      if (size < 0 || i + size > end) break;
      if (c == 0x10 && size == 4 && i + size < end) found = i;
      i += size;
    }
    if (found >= 0) return addRegister(Q_VOLUME_M3, u32f(found), -3, found, 4);
    return false;
  }
  if (m == M_BFW && get(S_TYPE) == 0x08 && get(S_TPL_CI) == 0x7a && pos + 8 <= end) {
    // BFW 240 radio HCA: after 4 bytes (2F2F and two more), previous and current period HCA, big-endian
    const a = pos + 6;
    return addRegister(Q_HCA, f64((fb(a) << 8) | fb(a + 1)), 0, a, 2);
  }
  return false;
}

/** Rules tried when the generic selection found no register. */
export function mfctRecordsFallback(): bool {
  const m = get(S_M);
  if (get(S_ID_M) == M_IME && get(S_TYPE) == 0x02) {
    // IME electricity meters (wired): total positive active energy is the record with
    // header 84 90 10 FF 80 84 3B (manufacturer VIF: 80 active, 84 3B import), 0.01 kWh
    const n = get(S_NREC);
    for (let i = 0; i < n; i++) {
      const o = i * REC_W;
      const h = i32(unchecked(REC[o + R_HDR_OFF]));
      if (i32(unchecked(REC[o + R_DATA_OFF])) - h != 7 || i32(unchecked(REC[o + R_DATA_LEN])) != 4) continue;
      if (fb(h) != 0x84 || fb(h + 1) != 0x90 || fb(h + 2) != 0x10 || fb(h + 3) != 0xff) continue;
      if (fb(h + 4) != 0x80 || fb(h + 5) != 0x84 || fb(h + 6) != 0x3b) continue;
      return addRegister(Q_ENERGY_WH, u32f(h + 7), 1, h + 7, 4);
    }
  }
  if (m == M_ZRI && get(S_TYPE) == 0x16 && get(S_VER) == 0x0b) {
    // Zenner 0B water meter: manufacturer data after DIF 0F: status, month target and
    // total (u32 LE each), the volumes in 1/256000 m3
    const n = get(S_NREC);
    for (let i = 0; i < n; i++) {
      const o = i * REC_W;
      if (i32(unchecked(REC[o + R_VIF])) != 0x500 || i32(unchecked(REC[o + R_DIF])) != 0x0f) continue;
      const d = i32(unchecked(REC[o + R_DATA_OFF]));
      if (i32(unchecked(REC[o + R_DATA_LEN])) < 12) continue;
      return addRegister(Q_VOLUME_M3, u32f(d + 8) / 256, -3, d + 8, 4);
    }
  }
  if (m == M_QDS) {
    // Qundis: one record DIF 0D, VIF FF 5F holding 8 header bytes, a primary
    // VIF at +9, the error date and the current value in BCD at +12
    const n = get(S_NREC);
    for (let i = 0; i < n; i++) {
      const o = i * REC_W;
      if (i32(unchecked(REC[o + R_VIF])) != 0x400 || i32(unchecked(REC[o + R_DIF])) != 0x0d) continue;
      if (i32(unchecked(REC[o + R_VIFE0])) != 0x5f) continue;
      const d = i32(unchecked(REC[o + R_DATA_OFF]));
      const len = i32(unchecked(REC[o + R_DATA_LEN]));
      if (len < 16) continue;
      primaryVif(fb(d + 9) & 0x7f);
      const q = lastQty();
      if (kindOf(q) == 0) continue;
      const v = bcd(d + 12, 4);
      if (v < 0) continue;
      return addRegister(q, v, lastExp(), d + 12, 4);
    }
  }
  return false;
}

/**
 * Radio converters (device type 37, meter side) name the meter behind them in
 * an enhanced-identification record (DIF 07, VIF 79: id, M, version, type);
 * that id is the last address seen, so it becomes the printed id.
 */
export function enhancedId(): void {
  if (get(S_TYPE) != 0x37) return;
  const n = get(S_NREC);
  for (let i = 0; i < n; i++) {
    const o = i * REC_W;
    if (i32(unchecked(REC[o + R_VIF])) != 0x79 || i32(unchecked(REC[o + R_DIF])) != 0x07) continue;
    if (i32(unchecked(REC[o + R_DATA_LEN])) != 8) continue;
    set(S_ID, u32le(i32(unchecked(REC[o + R_DATA_OFF]))));
    return;
  }
}

export function noRegister(): i32 {
  set(S_REASON, E_NO_REGISTER);
  return R_UNDECODABLE;
}
