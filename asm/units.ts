// VIF tables: primary (EN 13757-3 table 10), FB extension (table 14) and
// FD extension (table 12). Each VIF maps to a quantity code and a decimal
// exponent (for durations the exponent slot holds the time unit index
// 0 s, 1 min, 2 h, 3 d). Quantity names live in src/decode/quantities.ts
// in the same order.

export const Q_UNKNOWN: i32 = 0;
export const Q_ENERGY_WH: i32 = 1;
export const Q_ENERGY_J: i32 = 2;
export const Q_VOLUME_M3: i32 = 3;
export const Q_DATE: i32 = 18;
export const Q_DATETIME: i32 = 19;
export const Q_HCA: i32 = 20;
export const Q_PLAIN_TEXT: i32 = 26;
export const Q_MANUFACTURER_SPECIFIC: i32 = 28;
export const Q_ERROR_FLAGS: i32 = 53;
export const Q_BATTERY_CHANGE: i32 = 77;
export const Q_SPECIAL: i32 = 85;

let qty: i32 = 0;
let exp: i32 = 0;

export function lastQty(): i32 {
  return qty;
}
export function lastExp(): i32 {
  return exp;
}

function q(a: i32, e: i32): void {
  qty = a;
  exp = e;
}

/** Primary VIF (extension bit already removed). */
export function primaryVif(v: i32): void {
  const n3 = v & 7;
  const n2 = v & 3;
  if (v < 0x08) q(1, n3 - 3);
  else if (v < 0x10) q(2, n3);
  else if (v < 0x18) q(3, n3 - 6);
  else if (v < 0x20) q(4, n3 - 3);
  else if (v < 0x24) q(5, n2);
  else if (v < 0x28) q(6, n2);
  else if (v < 0x30) q(7, n3 - 3);
  else if (v < 0x38) q(8, n3);
  else if (v < 0x40) q(9, n3 - 6);
  else if (v < 0x48) q(10, n3 - 7);
  else if (v < 0x50) q(11, n3 - 9);
  else if (v < 0x58) q(12, n3 - 3);
  else if (v < 0x5c) q(13, n2 - 3);
  else if (v < 0x60) q(14, n2 - 3);
  else if (v < 0x64) q(15, n2 - 3);
  else if (v < 0x68) q(16, n2 - 3);
  else if (v < 0x6c) q(17, n2 - 3);
  else if (v == 0x6c) q(18, 0);
  else if (v == 0x6d) q(19, 0);
  else if (v == 0x6e) q(20, 0);
  else if (v == 0x6f) q(0, 0);
  else if (v < 0x74) q(21, n2);
  else if (v < 0x78) q(22, n2);
  else if (v == 0x78) q(23, 0);
  else if (v == 0x79) q(24, 0);
  else if (v == 0x7a) q(25, 0);
  else if (v == 0x7c) q(26, 0);
  else if (v == 0x7e) q(27, 0);
  else if (v == 0x7f) q(28, 0);
  else q(0, 0);
}

/** FB extension table. */
export function fbVif(v: i32): void {
  const n1 = v & 1;
  const n2 = v & 3;
  if (v < 0x02) q(1, n1 - 1 + 6);
  else if (v >= 0x08 && v < 0x0a) q(2, n1 - 1 + 9);
  else if (v >= 0x10 && v < 0x12) q(3, n1 + 2);
  else if (v >= 0x18 && v < 0x1a) q(4, n1 + 5);
  else if (v >= 0x1a && v < 0x1c) q(31, n1 - 1);
  else if (v == 0x21) q(29, -1);
  else if (v == 0x22) q(30, -1);
  else if (v == 0x23) q(30, 0);
  else if (v >= 0x28 && v < 0x2a) q(7, n1 - 1 + 6);
  else if (v >= 0x30 && v < 0x32) q(8, n1 - 1 + 9);
  else if (v >= 0x58 && v < 0x5c) q(32, n2 - 3);
  else if (v >= 0x5c && v < 0x60) q(33, n2 - 3);
  else if (v >= 0x60 && v < 0x64) q(34, n2 - 3);
  else if (v >= 0x64 && v < 0x68) q(35, n2 - 3);
  else if (v >= 0x70 && v < 0x74) q(36, n2 - 3);
  else if (v >= 0x74 && v < 0x78) q(37, n2 - 3);
  else if (v >= 0x78) q(38, (v & 7) - 3);
  else q(0, 0);
}

/** FD extension table. */
export function fdVif(v: i32): void {
  const n2 = v & 3;
  const n4 = v & 15;
  if (v < 0x04) q(39, n2 - 3);
  else if (v < 0x08) q(40, n2 - 3);
  else if (v == 0x08) q(41, 0);
  else if (v == 0x09) q(42, 0);
  else if (v == 0x0a) q(43, 0);
  else if (v == 0x0b) q(44, 0);
  else if (v == 0x0c) q(45, 0);
  else if (v == 0x0d) q(46, 0);
  else if (v == 0x0e) q(47, 0);
  else if (v == 0x0f) q(48, 0);
  else if (v == 0x10) q(49, 0);
  else if (v == 0x11) q(50, 0);
  else if (v >= 0x12 && v < 0x16) q(51, 0);
  else if (v == 0x16) q(52, 0);
  else if (v == 0x17) q(53, 0);
  else if (v == 0x18) q(54, 0);
  else if (v == 0x1a) q(55, 0);
  else if (v == 0x1b) q(56, 0);
  else if (v == 0x1c) q(57, 0);
  else if (v == 0x1d) q(58, 0);
  else if (v == 0x1e) q(59, 0);
  else if (v == 0x1f) q(60, 0);
  else if (v >= 0x20 && v < 0x24) q(61, 0);
  else if (v >= 0x24 && v < 0x28) q(62, n2);
  else if (v >= 0x2c && v < 0x30) q(63, n2);
  else if (v == 0x3a) q(64, 0);
  else if (v >= 0x40 && v < 0x50) q(65, n4 - 9);
  else if (v >= 0x50 && v < 0x60) q(66, n4 - 12);
  else if (v == 0x60) q(67, 0);
  else if (v == 0x61) q(68, 0);
  else if (v == 0x62) q(69, 0);
  else if (v == 0x63) q(70, 0);
  else if (v == 0x64) q(71, 0);
  else if (v == 0x65) q(72, 0);
  else if (v == 0x66) q(73, 0);
  else if (v == 0x67) q(74, 0);
  else if (v >= 0x68 && v < 0x6c) q(75, n2);
  else if (v >= 0x6c && v < 0x70) q(76, n2);
  else if (v == 0x70) q(77, 0);
  else if (v == 0x71) q(78, 0);
  else if (v == 0x72) q(79, 0);
  else if (v == 0x73) q(80, 0);
  else if (v == 0x74) q(81, 0);
  else if (v == 0x75) q(82, 0);
  else if (v == 0x76) q(83, 0);
  else q(0, 0);
}
