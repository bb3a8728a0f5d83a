// The decoded part of a telegram's stored raw payload as objects, `{ link, records }` (the
// link-layer fields and every record), as the sync decode (telegram-outcome.ts) and the
// analyzer return them, and the TabSeparated form the readings INSERT carries its text in.
// The workers write that text as bytes instead (payload-bytes.ts); these objects are what
// those bytes are tested against.
import type { DecoderCore } from './core.js'
import { S, R, REC_W, D, QUANTITIES, TIME_UNITS } from './layout.js'
import {
  formatDate,
  frameText,
  hex2,
  hexOf,
  manufacturer,
  printedId,
  scaled,
} from './telegram-text.js'

export const FUNCS = ['instantaneous', 'maximum', 'minimum', 'error']
export const DLL_CRC_NAMES = ['none', 'A', 'B']

/** Decoded records (JSON-able) for the stored raw payload. */
export function buildRecords(core: DecoderCore): unknown[] {
  const { CTRL, REC, F } = core
  const n = CTRL[S.NREC]!
  const sel = CTRL[S.SEL]!
  const out: unknown[] = []
  for (let i = 0; i < n; i++) {
    const o = i * REC_W
    const qty = REC[o + R.QTY]!
    const dtype = REC[o + R.DTYPE]!
    const hdr = REC[o + R.HDR_OFF]!
    const doff = REC[o + R.DATA_OFF]!
    const dlen = REC[o + R.DATA_LEN]!
    const exp = REC[o + R.EXP]!
    const [name, unit0] = QUANTITIES[qty] ?? ['unknown', null]
    let unit: string | null = unit0
    let value: unknown
    if (dtype === D.NUMBER) {
      if (unit === 'time') {
        unit = TIME_UNITS[exp] ?? null
        value = REC[o + R.VALUE]!
      } else value = scaled(REC[o + R.VALUE]!, exp)
    } else if (dtype === D.STRING) value = frameText(F, doff, doff + dlen - 1)
    else if (dtype === D.BYTES || dtype === D.INVALID) value = hexOf(F, doff, dlen)
    else if (dtype === D.NONE) value = null
    else value = formatDate(dtype, REC[o + R.VALUE]!)
    if (unit === 'time') unit = TIME_UNITS[exp] ?? null
    const rec: Record<string, unknown> = {
      header: hexOf(F, hdr, doff - hdr),
      quantity: name,
      value,
      unit,
      storage: REC[o + R.STORAGE]!,
      tariff: REC[o + R.TARIFF]!,
      subunit: REC[o + R.SUBUNIT]!,
      function: FUNCS[REC[o + R.FUNC]!],
    }
    const textOff = REC[o + R.TEXT_OFF]!
    if (textOff >= 0) rec.unit = frameText(F, textOff + 1, textOff + F[textOff]!)
    if (REC[o + R.MOD]) rec.vife = hex2(REC[o + R.VIFE0]! & 0xff)
    if (dtype === D.INVALID) rec.invalid = true
    if (i === sel) rec.selected = true
    out.push(rec)
  }
  return out
}

export function linkInfo(core: DecoderCore): Record<string, unknown> {
  const { CTRL } = core
  const wired = CTRL[S.FRAME] === 2
  const ci: string[] = []
  for (let i = 0; i < Math.min(4, CTRL[S.NCI]!); i++) ci.push(hex2(CTRL[S.CI0 + i]!))
  const info: Record<string, unknown> = {
    frame: wired ? 'mbus' : 'wmbus',
    c: hex2(CTRL[S.C]!),
    ci,
  }
  if (wired) info.address = CTRL[S.WIRED_ADDR]
  else {
    info.dll_crc = DLL_CRC_NAMES[CTRL[S.DLLCRC]!]
    info.dll_id = printedId(CTRL[S.DLL_ID]!)
  }
  if (CTRL[S.HAS_ID]) {
    info.id = printedId(CTRL[S.ID]!)
    info.manufacturer = manufacturer(CTRL[S.ID_M]!)
    info.version = hex2(CTRL[S.VER]!)
    info.device_type = hex2(CTRL[S.TYPE]!)
  }
  if (CTRL[S.ST]! >= 0) {
    info.access_number = CTRL[S.ACC]
    info.status_byte = hex2(CTRL[S.ST]!)
    info.security_mode = CTRL[S.SEC]
  }
  info.encrypted = CTRL[S.ENCRYPTED] === 1
  info.decrypted = CTRL[S.DECRYPTED] === 1
  return info
}

// The stored raw payload's decoded part, `JSON.stringify({ link: linkInfo(core), records:
// buildRecords(core) })`, is written as bytes by the worker (payload-bytes.ts), as a
// TabSeparated field: that text with its backslashes doubled.

/**
 * JSON text as a TabSeparated field (store/sql.ts `tsvText`): JSON has no raw tab or newline,
 * so only its backslashes are escaped, and unescaping is halving them (`fromTsv`).
 */
export const inTsv = (s: string) => (s.includes('\\') ? s.replaceAll('\\', '\\\\') : s)

/** `inTsv` undone. */
export const fromTsv = (s: string) => (s.includes('\\') ? s.replaceAll('\\\\', '\\') : s)
