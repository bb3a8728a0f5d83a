// Link layer: wireless DLL (L C M A) and wired M-Bus (C A) headers.
import { diehlLink } from "./mfct";
import { F, S_C, S_M, S_DLL_ID, S_DLL_VER, S_DLL_TYPE, S_FRAME, S_WIRED_ADDR, S_REASON, S_END, S_ID, S_ID_M, S_VER, S_TYPE, S_HAS_ID, E_TOO_SHORT, get, set, fb } from "./state";

export function u32le(p: i32): i32 {
  return fb(p) | (fb(p + 1) << 8) | (fb(p + 2) << 16) | (fb(p + 3) << 24);
}

export function setPrinted(idPos: i32, m: i32, ver: i32, type: i32): void {
  set(S_ID, u32le(idPos));
  set(S_ID_M, m);
  set(S_VER, ver);
  set(S_TYPE, type);
  set(S_HAS_ID, 1);
}

/** Returns the position of the first CI byte, or -1. */
export function linkLayer(n: i32): i32 {
  if (get(S_FRAME) == 2) {
    set(S_C, fb(4));
    set(S_WIRED_ADDR, fb(5));
    if (get(S_END) < 7) {
      set(S_REASON, E_TOO_SHORT);
      return -1;
    }
    return 6;
  }
  if (n < 11) {
    set(S_REASON, E_TOO_SHORT);
    return -1;
  }
  set(S_C, fb(1));
  const m = fb(2) | (fb(3) << 8);
  set(S_M, m);
  set(S_DLL_ID, u32le(4));
  set(S_DLL_VER, fb(8));
  set(S_DLL_TYPE, fb(9));
  setPrinted(4, m, fb(8), fb(9));
  diehlLink(n);
  return 10;
}
