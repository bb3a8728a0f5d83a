// Application layer: DIF/DIFE/VIF/VIFE records (EN 13757-3) with all data
// codings. Records go to REC (REC_W doubles each), see state.ts.
import { F, REC, REC_MAX, REC_W, S_NREC, S_REASON, S_ERRFLAGS, E_RECORD_TRUNCATED, E_BAD_RECORD, D_NUMBER, D_DATE_G, D_DATETIME_F, D_DATETIME_I, D_STRING, D_NONE, D_INVALID, D_BYTES, D_TIME_J, R_DIF, R_VIF, R_STORAGE, R_TARIFF, R_SUBUNIT, R_FUNC, R_QTY, R_VALUE, R_DTYPE, R_HDR_OFF, R_DATA_OFF, R_DATA_LEN, R_NVIFE, R_VIFE0, R_MOD, R_TEXT_OFF, R_EXP, get, set, fb } from "./state";
import { primaryVif, fbVif, fdVif, lastQty, lastExp, Q_DATE, Q_DATETIME, Q_BATTERY_CHANGE, Q_ERROR_FLAGS, Q_SPECIAL, Q_PLAIN_TEXT, Q_MANUFACTURER_SPECIFIC } from "./units";

let bcdBad: bool = false;

function readInt(p: i32, len: i32, signed: bool): f64 {
  let v: f64 = 0;
  let mul: f64 = 1;
  const neg = signed && len > 0 && (fb(p + len - 1) & 0x80) != 0;
  for (let i = 0; i < len; i++) {
    const b = fb(p + i);
    v += f64(neg ? 255 - b : b) * mul;
    mul *= 256;
  }
  return neg ? -(v + 1) : v;
}

function readBcd(p: i32, len: i32): f64 {
  let v: f64 = 0;
  let neg = false;
  bcdBad = false;
  for (let i = len - 1; i >= 0; i--) {
    const b = fb(p + i);
    let hi = b >> 4;
    const lo = b & 15;
    if (i == len - 1 && hi == 15) {
      neg = true;
      hi = 0;
    }
    if (hi > 9 || lo > 9) bcdBad = true;
    v = v * 100 + f64(hi * 10 + lo);
  }
  return neg ? -v : v;
}

function readReal(p: i32): f64 {
  const b3 = fb(p + 3);
  const b2 = fb(p + 2);
  const sign = b3 >> 7;
  const e = ((b3 & 0x7f) << 1) | (b2 >> 7);
  const m = f64(((b2 & 0x7f) << 16) | (fb(p + 1) << 8) | fb(p));
  let v: f64 = 0;
  if (e == 0) v = m * Math.pow(2, -149);
  else if (e == 255) v = m != 0 ? NaN : Infinity;
  else v = (m + 8388608) * Math.pow(2, f64(e - 150));
  return sign != 0 ? -v : v;
}

function put(i: i32, f: i32, v: f64): void {
  unchecked((REC[i * REC_W + f] = v));
}

/** Parses records in F[pos, end). Returns 0, or -1 when a record was cut short (records before it are kept). */
export function parseRecords(pos: i32, end: i32): i32 {
  let n: i32 = 0;
  let errFlags: i32 = -1;
  let status: i32 = 0;
  while (pos < end) {
    const hdr = pos;
    const dif = fb(pos++);
    if (dif == 0x2f) continue;
    if (dif == 0x0f || dif == 0x1f) {
      if (n < REC_MAX) {
        put(n, R_DIF, f64(dif));
        put(n, R_VIF, 0x500);
        put(n, R_STORAGE, 0);
        put(n, R_TARIFF, 0);
        put(n, R_SUBUNIT, 0);
        put(n, R_FUNC, 0);
        put(n, R_QTY, f64(Q_SPECIAL));
        put(n, R_VALUE, 0);
        put(n, R_DTYPE, f64(D_BYTES));
        put(n, R_HDR_OFF, f64(hdr));
        put(n, R_DATA_OFF, f64(pos));
        put(n, R_DATA_LEN, f64(end - pos));
        put(n, R_NVIFE, 0);
        put(n, R_VIFE0, -1);
        put(n, R_MOD, 1);
        put(n, R_TEXT_OFF, -1);
        put(n, R_EXP, 0);
        n++;
      }
      break;
    }
    if (dif == 0x7f) continue;
    if ((dif & 0x0f) == 0x0f) {
      status = -1;
      set(S_REASON, E_BAD_RECORD);
      break;
    }
    let storage: i32 = (dif >> 6) & 1;
    let tariff: i32 = 0;
    let subunit: i32 = 0;
    const func = (dif >> 4) & 3;
    let ext = dif & 0x80;
    let k: i32 = 0;
    while (ext != 0) {
      if (pos >= end || k >= 7) {
        status = -1;
        break;
      }
      const dife = fb(pos++);
      storage |= (dife & 15) << (1 + 4 * k);
      tariff |= ((dife >> 4) & 3) << (2 * k);
      subunit |= ((dife >> 6) & 1) << k;
      ext = dife & 0x80;
      k++;
    }
    if (status < 0 || pos >= end) {
      status = -1;
      break;
    }
    const vif = fb(pos++);
    const v = vif & 0x7f;
    let vcode: i32 = v;
    let textOff: i32 = -1;
    if (v == 0x7b || v == 0x7d) {
      if (pos >= end) {
        status = -1;
        break;
      }
      const e = fb(pos++);
      if (v == 0x7b) {
        fbVif(e & 0x7f);
        vcode = 0x100 | (e & 0x7f);
      } else {
        fdVif(e & 0x7f);
        vcode = 0x200 | (e & 0x7f);
      }
      ext = e & 0x80;
    } else {
      primaryVif(v);
      if (v == 0x7c) vcode = 0x300;
      else if (v == 0x7f) vcode = 0x400;
      ext = vif & 0x80;
    }
    const qty = lastQty();
    let exp = lastExp();
    let nvife: i32 = 0;
    let vife0: i32 = -1;
    let mod: i32 = 0;
    let mfctVife = vcode == 0x400;
    while (ext != 0) {
      if (pos >= end || nvife >= 10) {
        status = -1;
        break;
      }
      const e = fb(pos++);
      const ev = e & 0x7f;
      ext = e & 0x80;
      if (nvife == 0) vife0 = ev;
      nvife++;
      if (mfctVife) continue;
      if (ev >= 0x70 && ev <= 0x77) exp += ev - 0x70 - 6;
      else if (ev == 0x7d) exp += 3;
      else if (ev <= 0x1f) {
        // record error codes and reserved codes keep the value's meaning; average (12),
        // inverse compact profile (13), relative deviation (14) and the compact profiles
        // (1E, 1F) do not (see docs/decoders.md, "Combinable VIFEs")
        if (ev == 0x12 || ev == 0x13 || ev == 0x14 || ev == 0x1e || ev == 0x1f) mod = 1;
      } else if (ev == 0x3b || ev == 0x3e) {
        // accumulation of positive contributions only (forward flow), value at base conditions
        if (mod == 0) mod = 2;
      } else if (ev == 0x3a) {
        if (mod == 0 || mod == 2) mod = 3; // uncorrected meter unit (at metering conditions)
      } else if (ev == 0x7f) {
        mod = 1;
        mfctVife = true;
      } else mod = 1;
    }
    if (status < 0) break;
    if (vcode == 0x300) {
      if (pos >= end) {
        status = -1;
        break;
      }
      textOff = pos;
      pos += 1 + fb(pos);
      if (pos > end) {
        status = -1;
        break;
      }
    }
    const dt = dif & 0x0f;
    let len: i32 = 0;
    let dtype: i32 = D_NUMBER;
    let coding: i32 = 0; // 0 int, 1 bcd, 2 real, 3 string, 4 bytes, 5 none, 6 negative bcd
    if (dt == 0 || dt == 8) {
      coding = 5;
      dtype = D_NONE;
    } else if (dt <= 4) len = dt;
    else if (dt == 5) {
      len = 4;
      coding = 2;
    } else if (dt == 6) len = 6;
    else if (dt == 7) len = 8;
    else if (dt >= 9 && dt <= 12) {
      len = dt - 8;
      coding = 1;
    } else if (dt == 14) {
      len = 6;
      coding = 1;
    } else if (dt == 13) {
      if (pos >= end) {
        status = -1;
        break;
      }
      const lv = fb(pos++);
      if (lv <= 0xbf) {
        len = lv;
        coding = 3;
        dtype = D_STRING;
      } else if (lv >= 0xc0 && lv <= 0xcf) {
        len = lv - 0xc0;
        coding = 1;
      } else if (lv >= 0xd0 && lv <= 0xdf) {
        len = lv - 0xd0;
        coding = 6;
      } else if (lv >= 0xe0 && lv <= 0xef) {
        len = lv - 0xe0;
        coding = len <= 8 ? 0 : 4;
      } else if (lv >= 0xf0 && lv <= 0xf4) {
        len = 4 * (lv - 0xec);
        coding = 4;
      } else if (lv == 0xf5) {
        len = 48;
        coding = 4;
      } else if (lv == 0xf6) {
        len = 64;
        coding = 4;
      } else {
        status = -1;
        set(S_REASON, E_BAD_RECORD);
        break;
      }
    }
    if (pos + len > end) {
      status = -1;
      break;
    }
    let value: f64 = 0;
    if (coding == 0) {
      const dateLike = qty == Q_DATE || qty == Q_DATETIME || qty == Q_BATTERY_CHANGE;
      value = readInt(pos, len, !dateLike && qty != Q_ERROR_FLAGS);
      if (dateLike) {
        if (len == 2) dtype = D_DATE_G;
        else if (len == 4) dtype = D_DATETIME_F;
        else if (len == 6) dtype = D_DATETIME_I;
        else if (len == 3) dtype = D_TIME_J;
      }
      if (qty == Q_ERROR_FLAGS && func == 0 && storage == 0) {
        if (errFlags < 0) errFlags = 0;
        errFlags |= i32(value);
      }
    } else if (coding == 1 || coding == 6) {
      value = readBcd(pos, len);
      if (coding == 6) value = -value;
      if (bcdBad) dtype = D_INVALID;
    } else if (coding == 2) {
      value = readReal(pos);
      if (value != value || value == Infinity || value == -Infinity) dtype = D_INVALID;
    } else if (coding == 4) {
      dtype = D_BYTES;
    }
    if (qty == Q_PLAIN_TEXT || qty == Q_MANUFACTURER_SPECIFIC) mod = 1;
    if (n < REC_MAX) {
      put(n, R_DIF, f64(dif));
      put(n, R_VIF, f64(vcode));
      put(n, R_STORAGE, f64(storage));
      put(n, R_TARIFF, f64(tariff));
      put(n, R_SUBUNIT, f64(subunit));
      put(n, R_FUNC, f64(func));
      put(n, R_QTY, f64(qty));
      put(n, R_VALUE, value);
      put(n, R_DTYPE, f64(dtype));
      put(n, R_HDR_OFF, f64(hdr));
      put(n, R_DATA_OFF, f64(pos));
      put(n, R_DATA_LEN, f64(len));
      put(n, R_NVIFE, f64(nvife));
      put(n, R_VIFE0, f64(vife0));
      put(n, R_MOD, f64(mod));
      put(n, R_TEXT_OFF, f64(textOff));
      put(n, R_EXP, f64(exp));
      n++;
    }
    pos += len;
  }
  set(S_NREC, n);
  set(S_ERRFLAGS, errFlags);
  if (status < 0 && get(S_REASON) == 0) set(S_REASON, E_RECORD_TRUNCATED);
  return status;
}
