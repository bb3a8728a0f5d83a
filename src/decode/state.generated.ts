// Generated from asm/state.ts by asm/gen-layout.mjs (npm run build:asm). Do not edit.

export const REC_W = 20

/** Slots of the decoder's CTRL array (Int32). */
export const S = {
  FLEN: 1,
  /** 1 wireless, 2 wired long frame */
  FRAME: 2,
  /** 0 none, 1 format A, 2 format B */
  DLLCRC: 3,
  C: 4,
  M: 5,
  DLL_ID: 6,
  DLL_VER: 7,
  DLL_TYPE: 8,
  ELL_CI: 9,
  ELL_CC: 10,
  ELL_ACC: 11,
  ELL_SN: 12,
  /** end of the frame after the frame layer (CRCs stripped, by L) */
  FRAME_END: 13,
  /** printed id (last address seen), id bytes LE as u32 bits */
  ID: 15,
  ID_M: 16,
  VER: 17,
  TYPE: 18,
  TPL_CI: 19,
  ACC: 20,
  /** TPL status byte, -1 when none */
  ST: 21,
  CF: 22,
  SEC: 23,
  NBLK: 24,
  AFL: 25,
  AFL_MCL: 26,
  MAC_OFF: 27,
  MAC_LEN: 28,
  AFL_CTR_OFF: 29,
  POS: 30,
  STAGE: 31,
  /** 1 mode 5, 2 mode 7, 3 ELL AES-CTR, 4 manufacturer AES-CBC block (Apator NA-1) */
  SCHEME: 32,
  CIPH_OFF: 33,
  CIPH_LEN: 34,
  MAC_DATA_OFF: 35,
  MCL_OFF: 36,
  /** 1 when the announced ciphertext already looks plain */
  PREDEC: 37,
  NREC: 38,
  SEL: 39,
  /** 1 energy, 2 volume, 3 hca */
  SEL_KIND: 40,
  REASON: 41,
  NCI: 42,
  /** 43..46 CI chain */
  CI0: 43,
  /** mode 5: bytes the N encrypted blocks lack at the end of the frame */
  ENCR_SHORT: 47,
  APP_OFF: 48,
  ENCRYPTED: 49,
  DECRYPTED: 50,
  WIRED_ADDR: 51,
  /** OR of error-flag records (FD 17), -1 none */
  ERRFLAGS: 52,
  HAS_ID: 53,
  ELL_CRC_OFF: 54,
  TPL_OFF: 55,
  /** end of application data (excl. wired checksum) */
  END: 56,
  /** Diehl frame interpretation (asm/mfct.ts DI_*) */
  DIEHL: 57,
  /** compact formats (asm/compact.ts): slot + 1 of a newly learnt one */
  FMT_NEW: 58,
  /** its signature, or the one not known */
  FMT_SIG: 59,
  /** 1 when a compact frame's format was not known */
  FMT_MISS: 60,
  /** where a compact frame's format came from (asm/compact.ts FS_*) */
  FMT_SRC: 61,
  /** compact frame data CRC: 0 not checked, 1 matches, 2 differs */
  FMT_DCRC: 62,
  /** bytes after the frame the L-field counts, ignored (asm/frames.ts) */
  TRAIL: 63,
} as const

/** Fields of a record in the REC array (REC_W doubles per record). */
export const R = {
  DIF: 0,
  /** primary vif; 0x100|x for FB table, 0x200|x for FD table, 0x300 plain text, 0x400 manufacturer, 0x500 special DIF */
  VIF: 1,
  STORAGE: 2,
  TARIFF: 3,
  SUBUNIT: 4,
  FUNC: 5,
  QTY: 6,
  VALUE: 7,
  DTYPE: 8,
  HDR_OFF: 9,
  DATA_OFF: 10,
  DATA_LEN: 11,
  NVIFE: 12,
  VIFE0: 13,
  /** 1 when a VIFE changes the meaning (not a plain register) */
  MOD: 14,
  /** plain-text VIF offset (len byte) or -1 */
  TEXT_OFF: 15,
  /** decimal exponent (or time unit index for durations) */
  EXP: 16,
} as const

/** Data types of records (R.DTYPE). */
export const D = {
  NUMBER: 0,
  DATE_G: 1,
  DATETIME_F: 2,
  DATETIME_I: 3,
  STRING: 4,
  NONE: 5,
  INVALID: 6,
  BYTES: 7,
  TIME_J: 8,
} as const

/** Outcome codes of begin()/resume(). */
export const RC = {
  OK: 0,
  NEED_CRYPTO: 1,
  INVALID: 2,
  UNDECODABLE: 3,
  UNCONFIGURED: 4,
} as const

/** Reason codes (CTRL[S.REASON]); texts in layout.ts REASONS. */
export const E = {
  NONE: 0,
  NOT_HEX: 1,
  ODD_HEX: 2,
  TOO_SHORT: 3,
  LEN_MISMATCH: 4,
  TOO_LONG: 5,
  DLL_CRC: 6,
  WIRED_CS: 7,
  WIRED_FRAME: 8,
  TRUNCATED_HEADER: 9,
  UNSUPPORTED_CI: 10,
  UNSUPPORTED_SEC: 11,
  WRONG_KEY: 12,
  MAC: 13,
  ELL_CRC: 14,
  NO_REGISTER: 15,
  RECORD_TRUNCATED: 16,
  COMPACT_FRAME: 17,
  ENCR_LEN: 18,
  BAD_RECORD: 19,
  ENCRYPTED_NO_KEY: 20,
  MFCT_CI: 21,
  AFL: 22,
  NOT_DECODED: 23,
  LEN_SHORT: 24,
  LEN_TRAILING: 25,
  KEY_DES: 26,
  /** 32 + N: unsupported security mode N (0..31) */
  SEC_MODE: 32,
} as const
