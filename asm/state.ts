// Shared state of the decoder: fixed buffers and named slots.
// Written in the portable subset of AssemblyScript (no load/store, no i64,
// function-call casts only) so the same sources also run as plain JavaScript
// (see asm/portable.ts and bench/decode). The host's copy of the numbers below,
// src/decode/state.generated.ts, is generated from this file (asm/gen-layout.mjs).

export const IN_MAX: i32 = 8192; // ascii hex input (or raw bytes for binary frames)
export const F_MAX: i32 = 4096; // decoded frame bytes
export const REC_MAX: i32 = 128; // records kept per telegram
export const REC_W: i32 = 20; // doubles per record

export const IN = new Uint8Array(8192);
export const F = new Uint8Array(4096);
export const T = new Uint8Array(4096); // scratch (CRC stripping)
export const IVB = new Uint8Array(32); // IV / counter / KDF input prepared for the host
export const CTRL = new Int32Array(64);
export const REC = new Float64Array(128 * 20);

// CTRL slots
export const S_FLEN: i32 = 1;
export const S_FRAME: i32 = 2; // 1 wireless, 2 wired long frame
export const S_DLLCRC: i32 = 3; // 0 none, 1 format A, 2 format B
export const S_C: i32 = 4;
export const S_M: i32 = 5;
export const S_DLL_ID: i32 = 6;
export const S_DLL_VER: i32 = 7;
export const S_DLL_TYPE: i32 = 8;
export const S_ELL_CI: i32 = 9;
export const S_ELL_CC: i32 = 10;
export const S_ELL_ACC: i32 = 11;
export const S_ELL_SN: i32 = 12;
export const S_FRAME_END: i32 = 13; // end of the frame after the frame layer (CRCs stripped, by L)
export const S_ID: i32 = 15; // printed id (last address seen), id bytes LE as u32 bits
export const S_ID_M: i32 = 16;
export const S_VER: i32 = 17;
export const S_TYPE: i32 = 18;
export const S_TPL_CI: i32 = 19;
export const S_ACC: i32 = 20;
export const S_ST: i32 = 21; // TPL status byte, -1 when none
export const S_CF: i32 = 22;
export const S_SEC: i32 = 23;
export const S_NBLK: i32 = 24;
export const S_AFL: i32 = 25;
export const S_AFL_MCL: i32 = 26;
export const S_MAC_OFF: i32 = 27;
export const S_MAC_LEN: i32 = 28;
export const S_AFL_CTR_OFF: i32 = 29;
export const S_POS: i32 = 30;
export const S_STAGE: i32 = 31;
export const S_SCHEME: i32 = 32; // 1 mode 5, 2 mode 7, 3 ELL AES-CTR, 4 manufacturer AES-CBC block (Apator NA-1)
export const S_CIPH_OFF: i32 = 33;
export const S_CIPH_LEN: i32 = 34;
export const S_MAC_DATA_OFF: i32 = 35;
export const S_MCL_OFF: i32 = 36;
export const S_PREDEC: i32 = 37; // 1 when the announced ciphertext already looks plain
export const S_NREC: i32 = 38;
export const S_SEL: i32 = 39;
export const S_SEL_KIND: i32 = 40; // 1 energy, 2 volume, 3 hca
export const S_REASON: i32 = 41;
export const S_NCI: i32 = 42;
export const S_CI0: i32 = 43; // 43..46 CI chain
export const S_ENCR_SHORT: i32 = 47; // mode 5: bytes the N encrypted blocks lack at the end of the frame
export const S_APP_OFF: i32 = 48;
export const S_ENCRYPTED: i32 = 49;
export const S_DECRYPTED: i32 = 50;
export const S_WIRED_ADDR: i32 = 51;
export const S_ERRFLAGS: i32 = 52; // OR of error-flag records (FD 17), -1 none
export const S_HAS_ID: i32 = 53;
export const S_ELL_CRC_OFF: i32 = 54;
export const S_TPL_OFF: i32 = 55;
export const S_END: i32 = 56; // end of application data (excl. wired checksum)
export const S_DIEHL: i32 = 57; // Diehl frame interpretation (asm/mfct.ts DI_*)
export const S_FMT_NEW: i32 = 58; // compact formats (asm/compact.ts): slot + 1 of a newly learnt one
export const S_FMT_SIG: i32 = 59; // its signature, or the one not known
export const S_FMT_MISS: i32 = 60; // 1 when a compact frame's format was not known
export const S_FMT_SRC: i32 = 61; // where a compact frame's format came from (asm/compact.ts FS_*)
export const S_FMT_DCRC: i32 = 62; // compact frame data CRC: 0 not checked, 1 matches, 2 differs
export const S_TRAIL: i32 = 63; // bytes after the frame the L-field counts, ignored (asm/frames.ts)

// record fields
export const R_DIF: i32 = 0;
export const R_VIF: i32 = 1; // primary vif; 0x100|x for FB table, 0x200|x for FD table, 0x300 plain text, 0x400 manufacturer, 0x500 special DIF
export const R_STORAGE: i32 = 2;
export const R_TARIFF: i32 = 3;
export const R_SUBUNIT: i32 = 4;
export const R_FUNC: i32 = 5;
export const R_QTY: i32 = 6;
export const R_VALUE: i32 = 7;
export const R_DTYPE: i32 = 8;
export const R_HDR_OFF: i32 = 9;
export const R_DATA_OFF: i32 = 10;
export const R_DATA_LEN: i32 = 11;
export const R_NVIFE: i32 = 12;
export const R_VIFE0: i32 = 13;
export const R_MOD: i32 = 14; // 1 when a VIFE changes the meaning (not a plain register)
export const R_TEXT_OFF: i32 = 15; // plain-text VIF offset (len byte) or -1
export const R_EXP: i32 = 16; // decimal exponent (or time unit index for durations)

// data types of records
export const D_NUMBER: i32 = 0;
export const D_DATE_G: i32 = 1;
export const D_DATETIME_F: i32 = 2;
export const D_DATETIME_I: i32 = 3;
export const D_STRING: i32 = 4;
export const D_NONE: i32 = 5;
export const D_INVALID: i32 = 6;
export const D_BYTES: i32 = 7;
export const D_TIME_J: i32 = 8;

// outcome codes returned by begin()/resume()
export const R_OK: i32 = 0;
export const R_NEED_CRYPTO: i32 = 1;
export const R_INVALID: i32 = 2;
export const R_UNDECODABLE: i32 = 3;
export const R_UNCONFIGURED: i32 = 4;

// reason constants (texts live in src/decode/layout.ts REASONS)
export const E_NONE: i32 = 0;
export const E_NOT_HEX: i32 = 1;
export const E_ODD_HEX: i32 = 2;
export const E_TOO_SHORT: i32 = 3;
export const E_LEN_MISMATCH: i32 = 4;
export const E_TOO_LONG: i32 = 5;
export const E_DLL_CRC: i32 = 6;
export const E_WIRED_CS: i32 = 7;
export const E_WIRED_FRAME: i32 = 8;
export const E_TRUNCATED_HEADER: i32 = 9;
export const E_UNSUPPORTED_CI: i32 = 10;
export const E_UNSUPPORTED_SEC: i32 = 11;
export const E_WRONG_KEY: i32 = 12;
export const E_MAC: i32 = 13;
export const E_ELL_CRC: i32 = 14;
export const E_NO_REGISTER: i32 = 15;
export const E_RECORD_TRUNCATED: i32 = 16;
export const E_COMPACT_FRAME: i32 = 17;
export const E_ENCR_LEN: i32 = 18;
export const E_BAD_RECORD: i32 = 19;
export const E_ENCRYPTED_NO_KEY: i32 = 20;
export const E_MFCT_CI: i32 = 21;
export const E_AFL: i32 = 22;
export const E_NOT_DECODED: i32 = 23;
export const E_LEN_SHORT: i32 = 24;
export const E_LEN_TRAILING: i32 = 25;
export const E_KEY_DES: i32 = 26;
export const E_SEC_MODE: i32 = 32; // 32 + N: unsupported security mode N (0..31)

export function get(slot: i32): i32 {
  return unchecked(CTRL[slot]);
}
export function set(slot: i32, v: i32): void {
  unchecked((CTRL[slot] = v));
}
export function fb(i: i32): i32 {
  return i32(unchecked(F[i]));
}
