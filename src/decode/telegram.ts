// Host side of the telegram decoder: drives the core (WASM or portable JS),
// performs the AES steps with node:crypto, and turns the decoder state into a
// TelegramOutcome.
import type { DecoderCore } from './core.js'
import { S, R, REC_W, D, RC, E, REASONS, QUANTITIES, TIME_UNITS } from './layout.js'
import { aesCbcDecrypt, aesCtr, cmac } from './crypto.js'

export type TelegramOutcome =
  | {
      status: 'ok'
      identifier: string
      value: number
      unit: 'kwh' | 'm3' | null
      rawFlags: string[]
      statuses: string[]
      /**
       * The stored raw payload, final JSON text:
       * `{"telegram":"<hex>","decoded":{"link":{…},"records":[…]}}`. From the pool it is built
       * in the worker, so the main thread never materialises record objects.
       */
      rawPayload: string
      /** rawPayload as a JSON string literal. */
      rawJson: string
      /**
       * From the pool: rawPayload as the readings INSERT carries it, a TabSeparated field
       * (`inTsv`), in UTF-8 as the worker wrote it: a view of the batch's result buffer.
       * Ingest writes these bytes into the INSERT body as they are (no string made), and
       * rawPayload, rawJson and records are made from them only when read (wire.ts).
       */
      rawTsvBytes?: Uint8Array
      /** `{ link, records }`; from the pool parsed lazily out of rawPayload on read. */
      records: unknown
      /** fingerprintOf: access number and application bytes, for repeats heard by several gateways. */
      fingerprint: number
    }
  | { status: 'rejected_unconfigured'; reason: string }
  | { status: 'rejected_undecodable'; reason: string }
  | { status: 'invalid'; reason: string }

const HEX2: string[] = Array.from(
  { length: 256 },
  (_, n) => (n < 16 ? '0' : '') + n.toString(16).toUpperCase(),
)

function hex2(n: number): string {
  return HEX2[n] ?? (n < 16 ? '0' : '') + n.toString(16).toUpperCase()
}

/** Two lower-case hex digits per byte value (an identifier is printed for every telegram, twice). */
const HEX2_LOWER: string[] = HEX2.map((h) => h.toLowerCase())

export function printedId(id: number): string {
  return (
    HEX2_LOWER[id >>> 24]! +
    HEX2_LOWER[(id >>> 16) & 0xff]! +
    HEX2_LOWER[(id >>> 8) & 0xff]! +
    HEX2_LOWER[id & 0xff]!
  )
}

export function manufacturer(m: number): string {
  return String.fromCharCode(((m >> 10) & 31) + 64, ((m >> 5) & 31) + 64, (m & 31) + 64)
}

/**
 * Performs one crypto step. Returns the next core result code, or -1 when the
 * caller must stop with `rejected_undecodable` (reason in CTRL).
 */
export function cryptoStep(core: DecoderCore, key: Uint8Array): number {
  const { CTRL, F, IVB } = core
  const scheme = CTRL[S.SCHEME]!
  const off = CTRL[S.CIPH_OFF]!
  const len = CTRL[S.CIPH_LEN]!
  const predec = CTRL[S.PREDEC] === 1
  const orig = F.slice(off, off + len)
  if (key.length !== 16) {
    // an 8-byte (DES) key: every scheme the decoder asks the host for is AES-128
    CTRL[S.REASON] = E.KEY_DES
    return -1
  }
  if (scheme === 1 || scheme === 4) {
    F.set(aesCbcDecrypt(key, IVB.subarray(0, 16), orig), off)
  } else if (scheme === 3) {
    F.set(aesCtr(key, IVB.subarray(0, 16), orig), off)
  } else if (scheme === 2) {
    const kdf = Buffer.from(IVB.subarray(0, 16))
    const kenc = cmac(key, kdf)
    kdf[0] = 1
    const kmac = cmac(key, kdf)
    const mclOff = CTRL[S.MCL_OFF]!
    const ctrOff = CTRL[S.AFL_CTR_OFF]!
    const tpl = CTRL[S.MAC_DATA_OFF]!
    const end = CTRL[S.END]!
    const msg = new Uint8Array(5 + end - tpl)
    msg[0] = F[mclOff]!
    msg.set(F.subarray(ctrOff, ctrOff + 4), 1)
    msg.set(F.subarray(tpl, end), 5)
    const mac = cmac(kmac, msg, false)
    const macOff = CTRL[S.MAC_OFF]!
    const macLen = CTRL[S.MAC_LEN]!
    let same = macLen > 0
    for (let i = 0; i < macLen; i++) if (mac[i] !== F[macOff + i]) same = false
    if (!same) {
      if (predec) return core.resume(2)
      CTRL[S.REASON] = E.MAC
      return -1
    }
    F.set(aesCbcDecrypt(kenc, new Uint8Array(16), orig, false), off)
  } else {
    CTRL[S.REASON] = E.UNSUPPORTED_SEC
    return -1
  }
  const r = core.resume(1)
  if (
    r === RC.UNDECODABLE &&
    predec &&
    (CTRL[S.REASON] === E.WRONG_KEY || CTRL[S.REASON] === E.ELL_CRC)
  ) {
    // the bytes were plain already (predecrypted frame): accept them as sent
    F.set(orig, off)
    CTRL[S.SCHEME] = scheme
    CTRL[S.REASON] = 0
    return core.resume(2)
  }
  return r
}

/** Decodes the len ASCII hex characters already written to core.IN. Returns a core result code. */
export function runTelegram(core: DecoderCore, len: number, key: Uint8Array | null): number {
  let r = core.begin(len)
  for (let step = 0; r === RC.NEED_CRYPTO && step < 4; step++) {
    const { CTRL } = core
    if (key === null) {
      if (CTRL[S.PREDEC] === 1) r = core.resume(2)
      else return RC.UNCONFIGURED
    } else {
      r = cryptoStep(core, key)
      if (r < 0) return RC.UNDECODABLE
    }
  }
  if (r === RC.NEED_CRYPTO) {
    core.CTRL[S.REASON] = E.UNSUPPORTED_SEC
    return RC.UNDECODABLE
  }
  return r
}

const TPL_FLAGS: [number, string, string | null][] = [
  [0x04, 'power_low', 'low_battery'],
  [0x08, 'permanent_error', 'error'],
  [0x10, 'temporary_error', 'error'],
  [0x20, 'manufacturer_status_bit5', 'error'],
  [0x40, 'manufacturer_status_bit6', 'error'],
  [0x80, 'manufacturer_status_bit7', 'error'],
]

/** Raw flags of the TPL status byte and error-flag records, and their canonical statuses. */
export function statusFlags(
  st: number,
  errFlags: number,
): { rawFlags: string[]; statuses: string[] } {
  // Most telegrams: no flag (no Set made for them; this runs for every telegram).
  if (st <= 0 && errFlags <= 0) return { rawFlags: [], statuses: [] }
  const rawFlags: string[] = []
  const set = new Set<string>()
  if (st > 0) {
    const app = st & 3
    if (app === 1) rawFlags.push('application_busy')
    else if (app === 2) {
      rawFlags.push('application_error')
      set.add('error')
    } else if (app === 3) {
      rawFlags.push('abnormal_condition')
      set.add('error')
    }
    for (const [bit, name, canon] of TPL_FLAGS) {
      if (st & bit) {
        rawFlags.push(name)
        if (canon) set.add(canon)
      }
    }
  }
  if (errFlags > 0) {
    for (let b = 0; b < 32; b++) {
      if ((errFlags >>> b) & 1) rawFlags.push(`error_flag_bit${b}`)
    }
    set.add('error')
  }
  return { rawFlags, statuses: [...set] }
}

// The same values as `10 ** k`, made once (a power per record's value was ~4 % of a decoder
// worker's time).
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k)

function pow10(e: number): number {
  const k = Math.abs(e)
  return k < POW10.length ? POW10[k]! : 10 ** k
}

/** A record's number scaled by its decimal exponent, as every payload writer computes it. */
export function scaled(v: number, e: number): number {
  return e >= 0 ? v * pow10(e) : v / pow10(e)
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0')
}

/** A date or time record's value as stored (ASCII digits and separators). */
export function formatDate(t: number, v: number): string {
  const b = (i: number) => Math.floor(v / 2 ** (8 * i)) & 0xff
  if (t === D.DATE_G) {
    const day = b(0) & 31,
      month = b(1) & 15,
      year = 2000 + (((b(0) & 0xe0) >> 5) | ((b(1) & 0xf0) >> 1))
    return `${year}-${pad(month)}-${pad(day)}`
  }
  if (t === D.DATETIME_F) {
    const min = b(0) & 63,
      hour = b(1) & 31,
      day = b(2) & 31,
      month = b(3) & 15
    const year = 2000 + (((b(2) & 0xe0) >> 5) | ((b(3) & 0xf0) >> 1))
    return `${year}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(min)}`
  }
  if (t === D.DATETIME_I) {
    const sec = b(0) & 63,
      min = b(1) & 63,
      hour = b(2) & 31,
      day = b(3) & 31,
      month = b(4) & 15
    const year = 2000 + (((b(3) & 0xe0) >> 5) | ((b(4) & 0xf0) >> 1))
    return `${year}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(min)}:${pad(sec)}`
  }
  const sec = b(0) & 63,
    min = b(1) & 63,
    hour = b(2) & 31
  return `${pad(hour)}:${pad(min)}:${pad(sec)}`
}

function hexOf(F: Uint8Array, off: number, len: number): string {
  let s = ''
  for (let i = 0; i < len; i++) s += hex2(F[off + i]!)
  return s
}

/**
 * Text the decoder found in the frame (a text value, a plain-text unit): a char per byte,
 * from `last` down to `first` (M-Bus sends text last char first).
 */
export function frameText(F: Uint8Array, first: number, last: number): string {
  let s = ''
  for (let k = last; k >= first; k--) s += String.fromCharCode(F[k]!)
  return s
}

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

export function identifierOf(core: DecoderCore): string {
  const { CTRL } = core
  if (CTRL[S.HAS_ID]) return printedId(CTRL[S.ID]!)
  return 'p' + CTRL[S.WIRED_ADDR]
}

/** Canonical register value: kWh for energy, m3 for volume, HCA units unscaled. */
export function selectedValue(core: DecoderCore): { value: number; unit: 'kwh' | 'm3' | null } {
  const { CTRL, REC } = core
  const o = CTRL[S.SEL]! * REC_W
  const qty = REC[o + R.QTY]!
  const v = REC[o + R.VALUE]!
  const e = REC[o + R.EXP]!
  if (qty === 1) return { value: scaled(v, e - 3), unit: 'kwh' }
  if (qty === 2) return { value: scaled(v, e) / 3.6e6, unit: 'kwh' }
  if (qty === 3) return { value: scaled(v, e), unit: 'm3' }
  return { value: scaled(v, e), unit: null }
}

export function reasonOf(core: DecoderCore, fallback: number): string {
  const r = core.CTRL[S.REASON]!
  return REASONS[r || fallback] ?? 'undecodable'
}

/**
 * FNV-1a (32 bits) of the telegram's bytes after the link header (from the first CI to the
 * end the L-field gives, block CRCs stripped, decrypted): the access number and the
 * application bytes. Gateways that hear one radio telegram hand over these bytes alike,
 * whatever CRCs or trailing bytes they add (ingest: repeats within a window are duplicates).
 */
export function fingerprintOf(core: DecoderCore): number {
  const { CTRL, F } = core
  const start = CTRL[S.FRAME] === 2 ? 6 : 10
  const end = Math.min(CTRL[S.FRAME_END]!, F.length)
  let h = 0x811c9dc5
  for (let i = start; i < end; i++) h = Math.imul(h ^ F[i]!, 0x01000193)
  return h >>> 0
}

/** Builds the full outcome after runTelegram (`hex`: the telegram as sent, for rawPayload). */
export function outcomeOf(core: DecoderCore, code: number, hex = ''): TelegramOutcome {
  if (code === RC.OK) {
    const { value, unit } = selectedValue(core)
    const { rawFlags, statuses } = statusFlags(core.CTRL[S.ST]!, core.CTRL[S.ERRFLAGS]!)
    const records = { link: linkInfo(core), records: buildRecords(core) }
    const rawPayload = JSON.stringify({ telegram: hex, decoded: records })
    return {
      status: 'ok',
      identifier: identifierOf(core),
      value,
      unit,
      rawFlags,
      statuses,
      rawPayload,
      rawJson: JSON.stringify(rawPayload),
      records,
      fingerprint: fingerprintOf(core),
    }
  }
  if (code === RC.INVALID) return { status: 'invalid', reason: reasonOf(core, E.NOT_DECODED) }
  if (code === RC.UNCONFIGURED)
    return { status: 'rejected_unconfigured', reason: REASONS[E.ENCRYPTED_NO_KEY]! }
  return { status: 'rejected_undecodable', reason: reasonOf(core, E.NOT_DECODED) }
}

const inBuffers = new WeakMap<Uint8Array, Buffer>()

/** Writes an ASCII hex string into core.IN; returns its length or -1 when too long. Non-ASCII becomes '?'. */
export function writeHex(core: DecoderCore, hex: string): number {
  const n = hex.length
  if (n > core.IN.length) return -1
  let b = inBuffers.get(core.IN)
  if (!b) {
    b = Buffer.from(core.IN.buffer, core.IN.byteOffset, core.IN.length)
    inBuffers.set(core.IN, b)
  }
  if (Buffer.byteLength(hex, 'utf8') !== n) hex = hex.replace(/[^\x00-\x7f]/g, '?')
  b.write(hex, 0, n, 'latin1')
  return n
}

export function parseKey(key: string | null): Uint8Array | null | 'bad' {
  if (key === null || key === undefined) return null
  // AES-128 keys (16 bytes); 8-byte keys are DES keys for security modes 2 and 3
  if (!/^(?:[0-9a-fA-F]{16}){1,2}$/.test(key)) return 'bad'
  return Buffer.from(key, 'hex')
}

/** One telegram, synchronously, on a given core (tests, bench, worker). */
export function decodeTelegramSync(
  core: DecoderCore,
  hex: string,
  key: string | null,
): TelegramOutcome {
  const k = parseKey(key)
  if (k === 'bad')
    return {
      status: 'rejected_undecodable',
      reason: 'key must be 32 hex digits (or 16 for a DES key)',
    }
  const len = writeHex(core, hex)
  if (len < 0) return { status: 'invalid', reason: REASONS[E.TOO_LONG]! }
  return outcomeOf(core, runTelegram(core, len, k), hex)
}
