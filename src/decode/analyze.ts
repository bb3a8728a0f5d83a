// Telegram analyzer for operators (CLI `meterflow decode`, POST /admin/v1/decode): runs the
// WASM decoder on one telegram and reports what each layer found, the security mode, how the
// decryption was verified, every record, the register chosen and why, or which layer failed
// and why. Everything comes from the decoder's state (CTRL / REC) after the run: nothing is
// parsed again here.
import { loadWasmCore, type DecoderCore } from './core.js'
import { S, R, REC_W, D, RC, E, REASONS } from './layout.js'
import { cryptoStep, parseKey, writeHex } from './telegram.js'
import { buildRecords } from './payload-records.js'
import { statusFlags } from './status-flags.js'
import { selectedValue } from './register-value.js'
import { identifierOf } from './telegram-identity.js'
import { manufacturer, printedId } from './telegram-text.js'

export interface TelegramAnalysis {
  status: 'ok' | 'rejected_unconfigured' | 'rejected_undecodable' | 'invalid'
  reason?: string
  /** The layer that stopped the decoding, and why (absent when ok). */
  failed?: { layer: string; reason: string }
  identifier?: string
  value?: number
  unit?: 'kwh' | 'm3' | null
  raw_flags?: string[]
  layers: Record<string, unknown>[]
  security: Record<string, unknown>
  records: Record<string, unknown>[]
  register: Record<string, unknown> | null
}

const hex2 = (n: number) => (n & 0xff).toString(16).padStart(2, '0').toUpperCase()
const SCHEMES = [
  '',
  'mode 5 (AES-128-CBC, IV from M, A, ACC)',
  'mode 7 (AES-128-CBC, CMAC key derivation)',
  'ELL AES-128-CTR',
  'manufacturer AES-128-CBC block',
]
const VERIFY = [
  '',
  '2F2F after decryption',
  'AFL MAC, then 2F2F',
  'ELL payload CRC',
  'check byte 2F',
]
const CODINGS: Record<number, string> = {
  0: 'no data',
  1: '8-bit integer',
  2: '16-bit integer',
  3: '24-bit integer',
  4: '32-bit integer',
  5: '32-bit real',
  6: '48-bit integer',
  7: '64-bit integer',
  8: 'selection for readout',
  9: '2 digit BCD',
  10: '4 digit BCD',
  11: '6 digit BCD',
  12: '8 digit BCD',
  13: 'variable length',
  14: '12 digit BCD',
  15: 'special function',
}
const KINDS = ['', 'energy', 'volume', 'HCA']
const KEY_FAILURES = new Set<number>([E.WRONG_KEY, E.MAC, E.ELL_CRC, E.KEY_DES])
const FMT_SRC = [
  '',
  "this meter's earlier full frame",
  'the well-known format table',
  "another meter's full frame (data CRC verified)",
]

/** Which layer a reason code belongs to. */
function layerOf(reason: number, core: DecoderCore): string {
  if (reason === E.NOT_HEX || reason === E.ODD_HEX || reason === E.TOO_LONG) return 'input'
  if (reason === E.TRUNCATED_HEADER) {
    const n = Math.min(4, core.CTRL[S.NCI]!)
    const ci = n > 0 ? core.CTRL[S.CI0 + n - 1]! : -1
    return ci >= 0x8c && ci <= 0x8f ? 'ell' : ci === 0x90 ? 'afl' : 'tpl'
  }
  if (reason === E.AFL) return 'afl'
  if (reason === E.UNSUPPORTED_CI || reason === E.MFCT_CI) return 'tpl'
  if (reason === E.COMPACT_FRAME) return 'compact'
  if (reason === E.RECORD_TRUNCATED || reason === E.BAD_RECORD) return 'records'
  if (reason === E.NO_REGISTER) return 'register'
  if (
    reason === E.UNSUPPORTED_SEC ||
    reason === E.WRONG_KEY ||
    reason === E.MAC ||
    reason === E.ELL_CRC ||
    reason === E.ENCR_LEN ||
    reason === E.ENCRYPTED_NO_KEY ||
    reason === E.KEY_DES ||
    reason >= E.SEC_MODE
  )
    return 'security'
  return 'frame'
}

function layers(core: DecoderCore, hexLen: number): Record<string, unknown>[] {
  const { CTRL } = core
  const out: Record<string, unknown>[] = []
  const wired = CTRL[S.FRAME] === 2
  if (CTRL[S.FRAME] === 0) return out
  out.push({
    layer: 'frame',
    kind: wired ? 'wired M-Bus long frame' : 'wireless M-Bus',
    bytes: hexLen >> 1,
    ...(wired ? {} : { block_crcs: ['none', 'format A', 'format B'][CTRL[S.DLLCRC]!] }),
    ...(CTRL[S.TRAIL] ? { ignored_after_l_field: CTRL[S.TRAIL] } : {}),
  })
  out.push(
    wired
      ? { layer: 'link', c: hex2(CTRL[S.C]!), primary_address: CTRL[S.WIRED_ADDR] }
      : {
          layer: 'link',
          c: hex2(CTRL[S.C]!),
          manufacturer: manufacturer(CTRL[S.M]!),
          id: printedId(CTRL[S.DLL_ID]!),
          version: hex2(CTRL[S.DLL_VER]!),
          device_type: hex2(CTRL[S.DLL_TYPE]!),
        },
  )
  const n = Math.min(4, CTRL[S.NCI]!)
  for (let i = 0; i < n; i++) {
    const ci = CTRL[S.CI0 + i]!
    if (ci >= 0x8c && ci <= 0x8f)
      out.push({
        layer: 'ell',
        ci: hex2(ci),
        cc: hex2(CTRL[S.ELL_CC]!),
        access_number: CTRL[S.ELL_ACC],
        ...(ci >= 0x8d && ci !== 0x8e
          ? { session_number: (CTRL[S.ELL_SN]! >>> 0).toString(16).padStart(8, '0') }
          : {}),
      })
    else if (ci === 0x90)
      out.push({
        layer: 'afl',
        ci: '90',
        ...(CTRL[S.MCL_OFF]! >= 0 ? { mcl: hex2(CTRL[S.AFL_MCL]!) } : {}),
        message_counter: CTRL[S.AFL_CTR_OFF]! >= 0,
        mac_bytes: CTRL[S.MAC_OFF]! >= 0 ? CTRL[S.MAC_LEN] : 0,
      })
    else if (i === n - 1) {
      const tpl: Record<string, unknown> = { layer: 'tpl', ci: hex2(ci) }
      if (ci >= 0xa0 && ci <= 0xb7) tpl.header = 'manufacturer-specific'
      else if (ci === 0x78 || ci === 0x79) tpl.header = 'none'
      else if (ci === 0x7a || ci === 0x7b) tpl.header = 'short'
      else if (ci === 0x72 || ci === 0x73) tpl.header = 'long'
      if (ci === 0x79 || ci === 0x7b || ci === 0x73) tpl.compact = true
      if (CTRL[S.ST]! >= 0) {
        tpl.access_number = CTRL[S.ACC]
        tpl.status_byte = hex2(CTRL[S.ST]!)
        tpl.configuration = (CTRL[S.CF]! & 0xffff).toString(16).padStart(4, '0')
        tpl.security_mode = CTRL[S.SEC]
        if (CTRL[S.SEC]) tpl.encrypted_blocks = CTRL[S.NBLK]
      }
      if (CTRL[S.HAS_ID]) {
        tpl.meter = {
          id: printedId(CTRL[S.ID]!),
          manufacturer: manufacturer(CTRL[S.ID_M]!),
          version: hex2(CTRL[S.VER]!),
          device_type: hex2(CTRL[S.TYPE]!),
        }
      }
      out.push(tpl)
    }
  }
  if (CTRL[S.FMT_SIG] && (CTRL[S.FMT_SRC] || CTRL[S.FMT_MISS])) {
    out.push({
      layer: 'compact',
      signature: (CTRL[S.FMT_SIG]! & 0xffff).toString(16).padStart(4, '0'),
      format_from: FMT_SRC[CTRL[S.FMT_SRC]!] ?? 'not known',
      data_crc: ['not checked', 'matches', 'differs'][CTRL[S.FMT_DCRC]!],
    })
  }
  return out
}

/** Why the decoder picked the register it did (from its record table). */
function registerWhy(core: DecoderCore): Record<string, unknown> | null {
  const { CTRL, REC } = core
  const sel = CTRL[S.SEL]!
  if (sel < 0) return null
  const o = sel * REC_W
  const kind = KINDS[CTRL[S.SEL_KIND]!] ?? 'unknown'
  const { value, unit } = selectedValue(core)
  if (REC[o + R.VIF] === 0x400 && REC[o + R.DIF] === 0) {
    return {
      record: sel,
      kind,
      value,
      unit,
      why: `manufacturer format of ${manufacturer(CTRL[S.ID_M]!)} (docs/decoders.md, "Manufacturer formats"): no generic record carries the register`,
    }
  }
  let candidates = 0
  for (let i = 0; i < CTRL[S.NREC]!; i++) {
    const p = i * REC_W
    const q = REC[p + R.QTY]!
    if (
      REC[p + R.FUNC] ||
      REC[p + R.STORAGE] ||
      REC[p + R.MOD] === 1 ||
      REC[p + R.DTYPE] !== D.NUMBER
    )
      continue
    if (q === 1 || q === 2 || q === 3 || q === 20) candidates++
  }
  const type = CTRL[S.TYPE]!
  const water = [0x03, 0x06, 0x07, 0x15, 0x16, 0x17, 0x28].includes(type)
  const order = water
    ? 'volume, energy, HCA'
    : type === 0x08
      ? 'HCA, energy, volume'
      : 'energy, volume, HCA'
  const mod = REC[o + R.MOD]!
  const vife = mod
    ? ` with VIFE ${hex2(REC[o + R.VIFE0]!)} (${mod === 2 ? 'forward flow / base conditions' : 'uncorrected unit'}: allowed at lower priority)`
    : ''
  return {
    record: sel,
    kind,
    value,
    unit,
    why:
      `instantaneous, storage 0, tariff ${REC[o + R.TARIFF]}, subunit ${REC[o + R.SUBUNIT]} ${kind} record${vife}; ` +
      `${candidates} candidate record(s); device type ${hex2(type)} prefers ${order}, then a clean VIF, the lowest tariff and subunit, then record order`,
  }
}

function records(core: DecoderCore): Record<string, unknown>[] {
  const { CTRL, REC, F } = core
  const base = buildRecords(core) as Record<string, unknown>[]
  return base.map((r, i) => {
    const o = i * REC_W
    const dif = REC[o + R.DIF]!
    const vif = REC[o + R.VIF]!
    const hdr = REC[o + R.HDR_OFF]!
    const difByte = F[hdr]!
    const table =
      vif >= 0x500
        ? 'special function'
        : vif >= 0x400
          ? 'manufacturer-specific'
          : vif >= 0x300
            ? 'plain text'
            : vif >= 0x200
              ? 'FD extension'
              : vif >= 0x100
                ? 'FB extension'
                : 'primary'
    const out: Record<string, unknown> = {
      index: i,
      ...r,
      dif: vif === 0x400 && dif === 0 && CTRL[S.SEL] === i ? null : hex2(difByte),
      data: CODINGS[dif & 15],
      vif_table: table,
    }
    if (REC[o + R.MOD] === 1) out.not_a_register = 'a VIFE changes the meaning'
    return out
  })
}

/** Analyzes one telegram with a fresh WASM decoder (the well-known compact formats loaded). */
export function analyzeTelegram(
  hex: string,
  key: string | null = null,
  core: DecoderCore = loadWasmCore(),
): TelegramAnalysis {
  const k = parseKey(key)
  const security: Record<string, unknown> = {
    key:
      key === null
        ? 'none'
        : k === 'bad'
          ? 'malformed'
          : (k as Uint8Array).length === 8
            ? '8 bytes (DES)'
            : '16 bytes (AES-128)',
  }
  const fail = (
    status: TelegramAnalysis['status'],
    reason: number,
    text?: string,
    layer = layerOf(reason, core),
  ): TelegramAnalysis => {
    const r = text ?? REASONS[reason] ?? 'not decoded'
    return {
      status,
      reason: r,
      failed: { layer, reason: r },
      layers: layers(core, hex.length),
      security: { ...security, ...securityOf(core) },
      records: records(core),
      register: null,
    }
  }
  if (k === 'bad') {
    core.CTRL.fill(0)
    return fail(
      'rejected_undecodable',
      E.NONE,
      'key must be 32 hex digits (or 16 for a DES key)',
      'key',
    )
  }
  const len = writeHex(core, hex)
  if (len < 0) {
    core.CTRL.fill(0)
    return fail('invalid', E.TOO_LONG)
  }
  let r = core.begin(len)
  const steps: Record<string, unknown>[] = []
  for (let step = 0; r === RC.NEED_CRYPTO && step < 4; step++) {
    const { CTRL } = core
    const scheme = CTRL[S.SCHEME]!
    const entry: Record<string, unknown> = {
      scheme: SCHEMES[scheme] ?? String(scheme),
      cipher_offset: CTRL[S.CIPH_OFF],
      cipher_bytes: CTRL[S.CIPH_LEN],
      ...(CTRL[S.ENCR_SHORT] ? { blocks_missing_bytes: CTRL[S.ENCR_SHORT] } : {}),
    }
    steps.push(entry)
    if (k === null) {
      if (CTRL[S.PREDEC] !== 1) {
        entry.result = 'no key'
        security.steps = steps
        return fail('rejected_unconfigured', E.ENCRYPTED_NO_KEY)
      }
      entry.result =
        'no key; the payload is already plain (' +
        (scheme === 3 ? 'ELL payload CRC matches' : '2F2F where the ciphertext starts') +
        ')'
      r = core.resume(2)
    } else {
      r = cryptoStep(core, k)
      entry.verified_by = VERIFY[scheme]
      if (r < 0 || (r === RC.UNDECODABLE && KEY_FAILURES.has(CTRL[S.REASON]!))) {
        entry.result = 'failed: ' + (REASONS[CTRL[S.REASON]!] ?? 'wrong key')
        security.steps = steps
        return fail('rejected_undecodable', CTRL[S.REASON]!)
      }
      entry.result = CTRL[S.DECRYPTED] ? 'decrypted and verified' : 'the payload was already plain'
    }
  }
  if (steps.length) security.steps = steps
  if (r === RC.NEED_CRYPTO) return fail('rejected_undecodable', E.UNSUPPORTED_SEC)
  if (r === RC.INVALID) return fail('invalid', core.CTRL[S.REASON]! || E.NOT_DECODED)
  if (r === RC.UNCONFIGURED) return fail('rejected_unconfigured', E.ENCRYPTED_NO_KEY)
  if (r !== RC.OK) return fail('rejected_undecodable', core.CTRL[S.REASON]! || E.NOT_DECODED)
  const { value, unit } = selectedValue(core)
  const { rawFlags } = statusFlags(core.CTRL[S.ST]!, core.CTRL[S.ERRFLAGS]!)
  return {
    status: 'ok',
    identifier: identifierOf(core),
    value,
    unit,
    raw_flags: rawFlags,
    layers: layers(core, hex.length),
    security: { ...security, ...securityOf(core) },
    records: records(core),
    register: registerWhy(core),
  }
}

function securityOf(core: DecoderCore): Record<string, unknown> {
  const { CTRL } = core
  return {
    ...(CTRL[S.ST]! >= 0 ? { tpl_security_mode: CTRL[S.SEC] } : {}),
    encrypted: CTRL[S.ENCRYPTED] === 1,
    decrypted: CTRL[S.DECRYPTED] === 1,
  }
}
