// Authentication and fragmentation layer, CI 90 (EN 13757-7).
import { S_AFL, S_AFL_MCL, S_MAC_OFF, S_MAC_LEN, S_AFL_CTR_OFF, S_MCL_OFF, S_END, S_REASON, E_TRUNCATED_HEADER, E_AFL, get, set, fb } from "./state";

export function aflLayer(pos: i32): i32 {
  const end = get(S_END);
  if (pos + 4 > end) {
    set(S_REASON, E_TRUNCATED_HEADER);
    return -1;
  }
  const alen = fb(pos + 1);
  const stop = pos + 2 + alen;
  if (alen < 2 || stop > end) {
    set(S_REASON, E_AFL);
    return -1;
  }
  const fcl = fb(pos + 2) | (fb(pos + 3) << 8);
  if ((fcl & 0x4000) != 0) {
    // more fragments follow: fragmented messages are not reassembled
    set(S_REASON, E_AFL);
    return -1;
  }
  set(S_AFL, 1);
  let p = pos + 4;
  let mcl: i32 = 0;
  if ((fcl & 0x2000) != 0) {
    mcl = fb(p);
    set(S_AFL_MCL, mcl);
    set(S_MCL_OFF, p);
    p++;
  }
  if ((fcl & 0x0200) != 0) p += 2;
  if ((fcl & 0x0800) != 0) {
    set(S_AFL_CTR_OFF, p);
    p += 4;
  }
  if ((fcl & 0x0400) != 0) {
    const at = mcl & 15;
    let ml: i32 = 0;
    if (at == 4) ml = 4;
    else if (at == 5) ml = 8;
    else if (at == 6) ml = 12;
    else if (at == 7) ml = 16;
    else if (at == 3) ml = 2;
    set(S_MAC_OFF, p);
    set(S_MAC_LEN, ml);
    p += ml;
  }
  if ((fcl & 0x1000) != 0) p += 2;
  if (p > stop) {
    set(S_REASON, E_AFL);
    return -1;
  }
  return stop;
}
