// Mirrors of the slot and code constants in asm/state.ts (keep in sync).
export const S = {
  FLEN: 1, FRAME: 2, DLLCRC: 3, C: 4, M: 5, DLL_ID: 6, DLL_VER: 7, DLL_TYPE: 8,
  ELL_CI: 9, ELL_CC: 10, ELL_ACC: 11, ELL_SN: 12, ID: 15, ID_M: 16, VER: 17, TYPE: 18,
  TPL_CI: 19, ACC: 20, ST: 21, CF: 22, SEC: 23, NBLK: 24, AFL: 25, AFL_MCL: 26, MAC_OFF: 27,
  MAC_LEN: 28, AFL_CTR_OFF: 29, POS: 30, SCHEME: 32, CIPH_OFF: 33, CIPH_LEN: 34,
  MAC_DATA_OFF: 35, MCL_OFF: 36, PREDEC: 37, NREC: 38, SEL: 39, SEL_KIND: 40, REASON: 41,
  NCI: 42, CI0: 43, APP_OFF: 48, ENCRYPTED: 49, DECRYPTED: 50, WIRED_ADDR: 51, ERRFLAGS: 52,
  HAS_ID: 53, ELL_CRC_OFF: 54, TPL_OFF: 55, END: 56,
} as const;

export const REC_W = 20;
export const R = {
  DIF: 0, VIF: 1, STORAGE: 2, TARIFF: 3, SUBUNIT: 4, FUNC: 5, QTY: 6, VALUE: 7, DTYPE: 8,
  HDR_OFF: 9, DATA_OFF: 10, DATA_LEN: 11, NVIFE: 12, VIFE0: 13, MOD: 14, TEXT_OFF: 15, EXP: 16,
} as const;

export const D = { NUMBER: 0, DATE_G: 1, DATETIME_F: 2, DATETIME_I: 3, STRING: 4, NONE: 5, INVALID: 6, BYTES: 7, TIME_J: 8 } as const;

export const RC = { OK: 0, NEED_CRYPTO: 1, INVALID: 2, UNDECODABLE: 3, UNCONFIGURED: 4 } as const;

export const E = {
  NONE: 0, NOT_HEX: 1, ODD_HEX: 2, TOO_SHORT: 3, LEN_MISMATCH: 4, TOO_LONG: 5, DLL_CRC: 6,
  WIRED_CS: 7, WIRED_FRAME: 8, TRUNCATED_HEADER: 9, UNSUPPORTED_CI: 10, UNSUPPORTED_SEC: 11,
  WRONG_KEY: 12, MAC: 13, ELL_CRC: 14, NO_REGISTER: 15, RECORD_TRUNCATED: 16, COMPACT_FRAME: 17,
  ENCR_LEN: 18, BAD_RECORD: 19, ENCRYPTED_NO_KEY: 20, MFCT_CI: 21, AFL: 22, NOT_DECODED: 23,
} as const;

/** Reason texts, indexed by the E codes returned by the decoder. */
export const REASONS: string[] = [
  'ok',
  'must be hexadecimal',
  'must have an even number of hex digits',
  'frame too short',
  'length field does not match frame length',
  'frame too long',
  'block CRC mismatch',
  'wired frame checksum mismatch',
  'malformed wired M-Bus long frame',
  'header truncated',
  'unsupported CI field',
  'unsupported security mode',
  'wrong key: decrypted payload does not start with 2F2F',
  'wrong key: AFL MAC mismatch',
  'wrong key: ELL payload CRC mismatch after decryption',
  'no current register (energy, volume or HCA at storage 0, tariff 0)',
  'data record truncated',
  'compact frame needs the format of an earlier full frame (not supported)',
  'encrypted length exceeds frame',
  'malformed data record',
  'encrypted telegram and no key configured',
  'manufacturer-specific CI field (proprietary payload not supported)',
  'malformed AFL header or fragmented message',
  'not decoded',
];

/** Quantity names and natural units by the quantity codes of asm/units.ts. */
export const QUANTITIES: [string, string | null][] = [
  ['unknown', null], ['energy', 'wh'], ['energy', 'j'], ['volume', 'm3'], ['mass', 'kg'],
  ['on_time', 'time'], ['operating_time', 'time'], ['power', 'w'], ['power', 'j/h'],
  ['volume_flow', 'm3/h'], ['volume_flow', 'm3/min'], ['volume_flow', 'm3/s'], ['mass_flow', 'kg/h'],
  ['flow_temperature', 'c'], ['return_temperature', 'c'], ['temperature_difference', 'k'],
  ['external_temperature', 'c'], ['pressure', 'bar'], ['date', null], ['datetime', null], ['hca', null],
  ['averaging_duration', 'time'], ['actuality_duration', 'time'], ['fabrication_no', null],
  ['enhanced_id', null], ['bus_address', null], ['plain_text_unit', null], ['any_vif', null],
  ['manufacturer_specific', null], ['volume', 'ft3'], ['volume', 'us_gal'], ['relative_humidity', '%'],
  ['flow_temperature', 'f'], ['return_temperature', 'f'], ['temperature_difference', 'f'],
  ['external_temperature', 'f'], ['temperature_limit', 'f'], ['temperature_limit', 'c'],
  ['max_power', 'w'], ['credit', null], ['debit', null], ['access_number', null], ['medium', null],
  ['manufacturer', null], ['parameter_set_id', null], ['model_version', null], ['hardware_version', null],
  ['firmware_version', null], ['software_version', null], ['customer_location', null], ['customer', null],
  ['access_code', null], ['password', null], ['error_flags', null], ['error_mask', null],
  ['digital_output', null], ['digital_input', null], ['baudrate', null], ['response_delay', null],
  ['retry', null], ['remote_control', null], ['storage_info', null], ['storage_interval', 'time'],
  ['duration_since_readout', 'time'], ['dimensionless', null], ['voltage', 'v'], ['current', 'a'],
  ['reset_counter', null], ['cumulation_counter', null], ['control_signal', null], ['day_of_week', null],
  ['week_number', null], ['time_point_day_change', null], ['parameter_activation_state', null],
  ['special_supplier_info', null], ['duration_since_cumulation', 'time'], ['battery_operating_time', 'time'],
  ['battery_change_datetime', null], ['rssi', 'dbm'], ['daylight_saving', null], ['listening_window', null],
  ['remaining_battery_lifetime', 'd'], ['stops', null], ['data_container', null], ['time', null],
  ['manufacturer_data', null],
];
export const TIME_UNITS = ['s', 'min', 'h', 'd'];
