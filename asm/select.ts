// Reading selection: the current register (function instantaneous, storage 0,
// a plain number, no VIFE that changes the meaning). Among those: best kind
// for the device type, then a clean VIF before one with VIFE 3B (forward
// accumulation), then the lowest tariff, then the lowest subunit.
// Kind preference by device type: water/gas -> volume first, HCA -> HCA units
// first, everything else (heat, cooling, electricity, unknown) -> energy first.
// The first record of the best kind wins. See docs/decoders.md.
import { REC, REC_W, S_NREC, S_SEL, S_SEL_KIND, S_TYPE, R_FUNC, R_STORAGE, R_TARIFF, R_SUBUNIT, R_MOD, R_DTYPE, R_QTY, D_NUMBER, get, set } from "./state";
import { Q_ENERGY_WH, Q_ENERGY_J, Q_VOLUME_M3, Q_HCA } from "./units";

function rec(i: i32, f: i32): i32 {
  return i32(unchecked(REC[i * REC_W + f]));
}

function rank(kind: i32, type: i32): i32 {
  const water = type == 0x03 || type == 0x06 || type == 0x07 || type == 0x15 || type == 0x16 || type == 0x17 || type == 0x28;
  if (water) return kind == 2 ? 0 : kind == 1 ? 1 : 2;
  if (type == 0x08) return kind == 3 ? 0 : kind == 1 ? 1 : 2;
  return kind == 1 ? 0 : kind == 2 ? 1 : 2;
}

export function selectRegister(): void {
  const n = get(S_NREC);
  const type = get(S_TYPE);
  let best: i32 = -1;
  let bestRank: i32 = 1 << 20;
  let bestKind: i32 = 0;
  for (let i = 0; i < n; i++) {
    if (rec(i, R_FUNC) != 0 || rec(i, R_STORAGE) != 0) continue;
    const mod = rec(i, R_MOD);
    if (mod == 1 || rec(i, R_DTYPE) != D_NUMBER) continue;
    const tariff = rec(i, R_TARIFF);
    const sub = rec(i, R_SUBUNIT);
    if (tariff > 15 || sub > 15) continue;
    const q = rec(i, R_QTY);
    let kind: i32 = 0;
    if (q == Q_ENERGY_WH || q == Q_ENERGY_J) kind = 1;
    else if (q == Q_VOLUME_M3) kind = 2;
    else if (q == Q_HCA) kind = 3;
    else continue;
    const r = rank(kind, type) * 1024 + (mod == 2 ? 256 : mod == 3 ? 512 : 0) + tariff * 16 + sub;
    if (r < bestRank) {
      best = i;
      bestRank = r;
      bestKind = kind;
    }
  }
  set(S_SEL, best);
  set(S_SEL_KIND, bestKind);
}
