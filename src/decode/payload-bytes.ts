// The decoded part of a telegram's stored raw payload, written by the worker straight into
// the result buffer as the UTF-8 bytes of its TabSeparated field: `JSON.stringify({ link:
// linkInfo(core), records: buildRecords(core) })` (payload-records.ts) with its backslashes
// doubled. test/decode/raw-payload.test.ts compares the two on every vector and on fuzzed
// frames.
//
// Why bytes, and a template per layout: that text built as a string (about 150
// concatenations per telegram, a rope V8 then flattened to write it) took ~90 % of a decoder
// worker's time per telegram (scratch, 40 plain bench frames: the decode ~1 µs, the text and
// its UTF-8 write 7–12 µs). Byte by byte it was no cheaper (docs/benchmarks.md, Tried): what
// is cheap is copying a few long pre-encoded runs and writing the values between them
// (the templates and how a telegram finds its own: payload-templates.ts).
import type { DecoderCore } from './core.js'
import { S, R, REC_W, D, QUANTITIES, TIME_UNITS } from './layout.js'
import {
  NO_LAYOUTS,
  keepFor,
  matches,
  newLayout,
  sharedLayout,
  sigHash,
  takeSignature,
  templateKey,
  templates,
  type Template,
} from './payload-templates.js'
import { DLL_CRC_NAMES, FUNCS, inTsv } from './payload-records.js'
import { frameText, manufacturer, scaled } from './telegram-text.js'

const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'))

// The text's constant pieces: none holds a backslash, so they read the same escaped for
// TabSeparated or not.
const P = {
  frameMbus: bytes('{"link":{"frame":"mbus","c":"'),
  frameWmbus: bytes('{"link":{"frame":"wmbus","c":"'),
  ci: bytes('","ci":['),
  address: bytes(',"address":'),
  dllCrc: bytes(',"dll_crc":"'),
  dllId: bytes(',"dll_id":"'),
  id: bytes(',"id":"'),
  manufacturer: bytes('","manufacturer":'),
  version: bytes(',"version":"'),
  deviceType: bytes('","device_type":"'),
  access: bytes(',"access_number":'),
  statusByte: bytes(',"status_byte":"'),
  security: bytes('","security_mode":'),
  encrypted: bytes(',"encrypted":true'),
  plain: bytes(',"encrypted":false'),
  decrypted: bytes(',"decrypted":true},"records":['),
  notDecrypted: bytes(',"decrypted":false},"records":['),
  header: bytes('{"header":"'),
  quantity: bytes('","quantity":"'),
  value: bytes('","value":'),
  unit: bytes(',"unit":'),
  storage: bytes(',"storage":'),
  tariff: bytes(',"tariff":'),
  subunit: bytes(',"subunit":'),
  func: bytes(',"function":"'),
  vife: bytes(',"vife":"'),
  invalid: bytes(',"invalid":true'),
  selected: bytes(',"selected":true}'),
  null: bytes('null'),
  end: bytes(']}'),
}

const QUOTE = 0x22
const HEX = bytes('0123456789ABCDEF')

// The buffer being written and the position in it (one telegram at a time, per thread).
// Every writer below moves `at` itself (`out[at++] = …`), and a module's bindings are
// read-only where imported: so the writers, the link and record layout and the entry that
// points `out` at the result buffer share this module.
let out: Uint8Array = new Uint8Array(0)
let at = 0

function put(piece: Uint8Array): void {
  out.set(piece, at)
  at += piece.length
}

function putHex2(n: number): void {
  out[at++] = HEX[(n >> 4) & 15]!
  out[at++] = HEX[n & 15]!
}

const HEX_LOWER = bytes('0123456789abcdef')

/** An identity as `printedId` prints it (lower-case hex of its 4 bytes, high first). */
function putId(id: number): void {
  for (let shift = 28; shift >= 0; shift -= 4) out[at++] = HEX_LOWER[(id >>> shift) & 15]!
}

/** Text known to be ASCII (names, digits, dates). */
function putAscii(s: string): void {
  for (let i = 0; i < s.length; i++) out[at++] = s.charCodeAt(i)
}

/** A JSON number the way JSON.stringify writes one (non-finite becomes null). */
function putNum(n: number): void {
  if (!Number.isFinite(n)) return put(P.null)
  // Other numbers' shortest form is V8's to make (ASCII: digits, '.', 'e', sign).
  if (!Number.isSafeInteger(n)) return putAscii(String(n))
  // -0 is written "0", as String(-0) is.
  if (n < 0) {
    out[at++] = 0x2d
    n = -n
  }
  if (n <= 0x7fffffff) return putInt31(n)
  // Up to 2^53: the digits above the last nine, then those nine (each part exact in a double).
  const hi = Math.floor(n / 1e9)
  let lo = (n - hi * 1e9) | 0
  putInt31(hi)
  for (let q = at + 8; q >= at; q--) {
    const d = (lo / 10) | 0
    out[q] = 0x30 + lo - d * 10
    lo = d
  }
  at += 9
}

/**
 * A non-negative integer below 2^31 (most register values and every small field), its digits
 * by integer division: the floating-point remainders above were a seventh of a decoder
 * worker's time per plain telegram.
 */
function putInt31(n: number): void {
  let x = n | 0
  let len = 1
  for (let y = x; y >= 10; y = (y / 10) | 0) len++
  let q = at + len
  do {
    const d = (x / 10) | 0
    out[--q] = 0x30 + x - d * 10
    x = d
  } while (x > 0)
  at += len
}

/** 256^i: a date record's value is up to six bytes, more than a 32-bit shift reaches. */
const BYTE_PLACE = [1, 2 ** 8, 2 ** 16, 2 ** 24, 2 ** 32, 2 ** 40]

/** Two digits of `n` (0–99). */
function put2(n: number): void {
  const d = (n / 10) | 0
  out[at++] = 0x30 + d
  out[at++] = 0x30 + n - d * 10
}

/**
 * A date or time record's value, the text `formatDate` makes (telegram-text.ts), written
 * digit by digit: that string, padded field by field, was a twentieth of the worker's time
 * per plain telegram. Every field is below 100 (masked to 4–6 bits), a year is 2000–2127.
 */
function putDate(t: number, v: number): void {
  const b = (i: number) => Math.floor(v / BYTE_PLACE[i]!) & 0xff
  let sec = -1
  if (t === D.DATE_G || t === D.DATETIME_F || t === D.DATETIME_I) {
    const o = t === D.DATE_G ? 0 : t === D.DATETIME_F ? 2 : 3
    const lo = b(o)
    const hi = b(o + 1)
    putInt31(2000 + (((lo & 0xe0) >> 5) | ((hi & 0xf0) >> 1)))
    out[at++] = 0x2d
    put2(hi & 15)
    out[at++] = 0x2d
    put2(lo & 31)
    if (t === D.DATE_G) return
    out[at++] = 0x20
    if (t === D.DATETIME_I) sec = b(0) & 63
  } else sec = b(0) & 63
  // The time: hour and minute, then the seconds where the type has them.
  const m = t === D.DATETIME_F ? 0 : 1
  put2(b(m + 1) & 31)
  out[at++] = 0x3a
  put2(b(m) & 63)
  if (sec < 0) return
  out[at++] = 0x3a
  put2(sec)
}

/** What JSON.stringify writes for a string, escaped for TabSeparated, in UTF-8. */
function putJsonString(s: string): void {
  const t = inTsv(JSON.stringify(s))
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i)
    if (c < 0x80) out[at++] = c
    else if (c < 0x800) {
      out[at++] = 0xc0 | (c >> 6)
      out[at++] = 0x80 | (c & 63)
    } else {
      out[at++] = 0xe0 | (c >> 12)
      out[at++] = 0x80 | ((c >> 6) & 63)
      out[at++] = 0x80 | (c & 63)
    }
  }
}

/**
 * A string stored in the frame, its characters one per byte, last byte first (the decoder's
 * text values and units), as a JSON string. Printable ASCII without quote or backslash, most
 * such text, needs no escaping and is copied as it is.
 */
function putFrameText(F: Uint8Array, first: number, last: number): void {
  let plain = true
  for (let k = last; k >= first; k--) {
    const c = F[k]!
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === 0x5c) {
      plain = false
      break
    }
  }
  if (plain) {
    out[at++] = QUOTE
    for (let k = last; k >= first; k--) out[at++] = F[k]!
    out[at++] = QUOTE
    return
  }
  putJsonString(frameText(F, first, last))
}

/**
 * How many bytes `writeDecodedTsv` may write for the telegram in `core` at most: a record's
 * fixed text is under 256 bytes, and a char of frame text takes at most 7 (`\\u001f`).
 */
export function decodedTsvBound(core: DecoderCore): number {
  const { CTRL, REC, F } = core
  const n = CTRL[S.NREC]!
  let bound = 512
  for (let i = 0; i < n; i++) {
    const o = i * REC_W
    const textOff = REC[o + R.TEXT_OFF]!
    bound += 256 + 2 * (REC[o + R.DATA_OFF]! - REC[o + R.HDR_OFF]!) + 7 * REC[o + R.DATA_LEN]!
    if (textOff >= 0) bound += 7 * F[textOff]!
  }
  return bound
}

// While a template is recorded: the runs and slots so far, and where the current run began.
let recording = false
let runs: Uint8Array[] = []
let slots: number[] = []
let runStart = 0

// What a slot holds, with up to three numbers each (in `Template.slots`, four per slot).
const ACCESS = 0 // the access number
const STATUS = 1 // the status byte
const NUMBER = 2 // REC index of the value, decimal exponent, 1 when not scaled (a duration)
const TEXT = 3 // first and last byte of text in F (written last byte first)
const BYTES = 4 // first byte and length in F, written as hex
const DATE = 5 // REC index of the value, its date type
// The meter's identity: link-layer id, the last address (printed), a wired frame's address.
const DLL_ID = 6
const ID = 7
const WIRED_ADDRESS = 8

/** A value of the text: written, and where a template is recorded, a slot between two runs. */
function value(core: DecoderCore, kind: number, a = 0, b = 0, c = 0): void {
  if (recording) {
    runs.push(new Uint8Array(out.subarray(runStart, at)))
    slots.push(kind, a, b, c)
  }
  writeValue(core, kind, a, b, c)
  runStart = at
}

function writeValue(core: DecoderCore, kind: number, a: number, b: number, c: number): void {
  switch (kind) {
    case ACCESS:
      return putNum(core.CTRL[S.ACC]!)
    case STATUS:
      return putHex2(core.CTRL[S.ST]!)
    case NUMBER:
      return putNum(c ? core.REC[a]! : scaled(core.REC[a]!, b))
    case TEXT:
      return putFrameText(core.F, a, b)
    case BYTES: {
      const F = core.F
      out[at++] = QUOTE
      for (let k = a; k < a + b; k++) putHex2(F[k]!)
      out[at++] = QUOTE
      return
    }
    case DLL_ID:
      return putId(core.CTRL[S.DLL_ID]!)
    case ID:
      return putId(core.CTRL[S.ID]!)
    case WIRED_ADDRESS:
      return putNum(core.CTRL[S.WIRED_ADDR]!)
    default:
      out[at++] = QUOTE
      putDate(b, core.REC[a]!)
      out[at++] = QUOTE
  }
}

/** A record's value: a slot, but for a record without one (null, constant). */
function recordValue(core: DecoderCore, o: number, time: boolean): void {
  const { REC } = core
  const dtype = REC[o + R.DTYPE]!
  const doff = REC[o + R.DATA_OFF]!
  const dlen = REC[o + R.DATA_LEN]!
  if (dtype === D.NUMBER) value(core, NUMBER, o + R.VALUE, REC[o + R.EXP]!, time ? 1 : 0)
  else if (dtype === D.STRING) value(core, TEXT, doff, doff + dlen - 1)
  else if (dtype === D.BYTES || dtype === D.INVALID) value(core, BYTES, doff, dlen)
  else if (dtype === D.NONE) put(P.null)
  else value(core, DATE, o + R.VALUE, dtype)
}

/**
 * Writes the decoded part of the stored payload, as its TabSeparated field in UTF-8, into
 * `buf` from `pos` (room for `decodedTsvBound(core)` bytes); returns the position after it.
 */
export function writeDecodedTsv(core: DecoderCore, buf: Uint8Array, pos: number): number {
  out = buf
  at = pos
  const key = templateKey(core)
  const layouts = templates.get(key)
  let t: Template | undefined
  // The first layout whose signature is the telegram's (no closure: this runs per telegram).
  for (const l of layouts ?? NO_LAYOUTS)
    if (matches(core, l.sig)) {
      t = l
      break
    }
  if (t) writeFrom(core, t)
  else {
    // A layout new to the meter, or a meter not heard yet: the template another meter of the
    // layout made, else the text piece by piece, recorded as the layout's template. Looked
    // up first, a fleet's first contact costs a template's copy per meter: written piece by
    // piece, each new meter's first telegram took the worker ~20 µs (first contact of 500
    // new plain meters per request, session 33).
    takeSignature(core)
    const h = sigHash()
    t = sharedLayout(h)
    if (t) writeFrom(core, t)
    else t = record(core, h)
    keepFor(key, layouts, t)
  }
  out = EMPTY
  return at
}

/** The text from a template: its runs, and the telegram's values between them. */
function writeFrom(core: DecoderCore, t: Template): void {
  const { runs, slots } = t
  let r = 0
  for (let j = 0; j < slots.length; j += 4) {
    put(runs[r++]!)
    writeValue(core, slots[j]!, slots[j + 1]!, slots[j + 2]!, slots[j + 3]!)
  }
  put(runs[r]!)
}

/** The text written piece by piece and recorded: the template of the layout in `sig` (hash `h`). */
function record(core: DecoderCore, h: number): Template {
  recording = true
  runs = []
  slots = []
  runStart = at
  writeLink(core)
  writeRecords(core)
  put(P.end)
  runs.push(new Uint8Array(out.subarray(runStart, at)))
  const t = newLayout(h, runs, slots)
  recording = false
  runs = []
  slots = []
  return t
}

const EMPTY = new Uint8Array(0)

function writeLink(core: DecoderCore): void {
  const { CTRL } = core
  const wired = CTRL[S.FRAME] === 2
  put(wired ? P.frameMbus : P.frameWmbus)
  putHex2(CTRL[S.C]!)
  put(P.ci)
  const nci = Math.min(4, CTRL[S.NCI]!)
  for (let i = 0; i < nci; i++) {
    if (i) out[at++] = 0x2c
    out[at++] = QUOTE
    putHex2(CTRL[S.CI0 + i]!)
    out[at++] = QUOTE
  }
  out[at++] = 0x5d
  if (wired) {
    put(P.address)
    value(core, WIRED_ADDRESS)
  } else {
    const crc = DLL_CRC_NAMES[CTRL[S.DLLCRC]!]
    if (crc !== undefined) {
      put(P.dllCrc)
      putAscii(crc)
      out[at++] = QUOTE
    }
    put(P.dllId)
    value(core, DLL_ID)
    out[at++] = QUOTE
  }
  if (CTRL[S.HAS_ID]) {
    put(P.id)
    value(core, ID)
    put(P.manufacturer)
    putJsonString(manufacturer(CTRL[S.ID_M]!))
    put(P.version)
    putHex2(CTRL[S.VER]!)
    put(P.deviceType)
    putHex2(CTRL[S.TYPE]!)
    out[at++] = QUOTE
  }
  if (CTRL[S.ST]! >= 0) {
    put(P.access)
    value(core, ACCESS)
    put(P.statusByte)
    value(core, STATUS)
    put(P.security)
    putNum(CTRL[S.SEC]!)
  }
  put(CTRL[S.ENCRYPTED] === 1 ? P.encrypted : P.plain)
  put(CTRL[S.DECRYPTED] === 1 ? P.decrypted : P.notDecrypted)
}

function writeRecords(core: DecoderCore): void {
  const { CTRL, REC, F } = core
  const n = CTRL[S.NREC]!
  const sel = CTRL[S.SEL]!
  for (let i = 0; i < n; i++) {
    const o = i * REC_W
    const qty = REC[o + R.QTY]!
    const dtype = REC[o + R.DTYPE]!
    const hdr = REC[o + R.HDR_OFF]!
    const doff = REC[o + R.DATA_OFF]!
    const exp = REC[o + R.EXP]!
    const [name, unit0] = QUANTITIES[qty] ?? ['unknown', null]
    let unit: string | null = unit0
    if (i) out[at++] = 0x2c
    put(P.header)
    for (let k = hdr; k < doff; k++) putHex2(F[k]!)
    put(P.quantity)
    putAscii(name)
    put(P.value)
    recordValue(core, o, unit === 'time')
    if (unit === 'time') unit = TIME_UNITS[exp] ?? null
    put(P.unit)
    const textOff = REC[o + R.TEXT_OFF]!
    if (textOff >= 0) putFrameText(F, textOff + 1, textOff + F[textOff]!)
    else if (unit === null) put(P.null)
    else {
      out[at++] = QUOTE
      putAscii(unit)
      out[at++] = QUOTE
    }
    put(P.storage)
    putNum(REC[o + R.STORAGE]!)
    put(P.tariff)
    putNum(REC[o + R.TARIFF]!)
    put(P.subunit)
    putNum(REC[o + R.SUBUNIT]!)
    const fn = FUNCS[REC[o + R.FUNC]!]
    if (fn !== undefined) {
      put(P.func)
      putAscii(fn)
      out[at++] = QUOTE
    }
    if (REC[o + R.MOD]) {
      put(P.vife)
      putHex2(REC[o + R.VIFE0]! & 0xff)
      out[at++] = QUOTE
    }
    if (dtype === D.INVALID) put(P.invalid)
    if (i === sel) put(P.selected)
    else out[at++] = 0x7d
  }
}
