// The templates a decoder worker keeps of the stored payload's text, one per telegram layout,
// and the signature that finds a telegram's; payload-bytes.ts records them and writes from them.
//
// A meter sends the same layout telegram after telegram: the same link fields, records,
// headers and units, and new values. So the text is kept per layout as a template (its
// constant runs between the values, which are the access number, the status byte and each
// record's value), found by a signature of everything else the text is made of and used only
// when that signature is equal in full; a telegram then costs a copy per run and its values.
import v8 from 'node:v8'
import type { DecoderCore } from './core.js'
import { S, R, REC_W } from './layout.js'

export interface Template {
  /** Everything the text is made of but the values (see `matches`). */
  sig: Float64Array
  /** Constant runs of the text, one more than there are slots. */
  runs: Uint8Array[]
  /** Per value between two runs: its kind and three numbers (see `value`, payload-bytes.ts). */
  slots: Int32Array
}

/**
 * Meters whose layouts a worker keeps: per meter, its few layouts' templates, which meters of
 * one layout share (`shared`): the meter's identity is a value of the text, not a part of its
 * runs. A template of its own per meter cost ~6 KB each, a bound of ~36,000 meters per worker
 * on a 4 GiB heap (a fleet past it missed every time: 37–42 µs a plain telegram against 7–9,
 * session 31), and 2,000 meters' templates read from memory outside the caches cost a
 * telegram ~2 µs more than 40 meters' (a pool of two workers, 2.6 against 4.7–5.3 µs).
 * An entry here is a Map slot and a small array, ~200 bytes: a twentieth of the heap holds
 * ~1 M meters on 4 GiB.
 */
const MAX_METERS = Math.max(8192, Math.floor((v8.getHeapStatistics().heap_size_limit * 0.05) / 200))
export const templates = new Map<number, Template[]>()
const LAYOUTS_PER_KEY = 4
/** Every layout seen, by a hash of its signature; the oldest go past this (meters keep theirs). */
const MAX_LAYOUTS = 4096
const shared = new Map<number, Template[]>()

let sig = new Float64Array(1024)
let sigLength = 0

/**
 * What the text is made of, values aside: link fields, the records' fields, header bytes and
 * text units, compared with a template's signature (false at the first difference). One
 * pass with no call per element: this runs for every telegram (through a helper per
 * element it was a fifth of the worker's time per plain telegram).
 */
export function matches(core: DecoderCore, of: Float64Array): boolean {
  const { CTRL, REC, F } = core
  const n = CTRL[S.NREC]!
  let j = 0
  for (let k = 0; k < LINK_FIELDS.length; k++) if (of[j++] !== CTRL[LINK_FIELDS[k]!]) return false
  if (of[j++] !== (CTRL[S.ST]! >= 0 ? 1 : 0)) return false
  for (let i = 0; i < n; i++) {
    const o = i * REC_W
    for (let k = 0; k < REC_FIELDS.length; k++)
      if (of[j++] !== REC[o + REC_FIELDS[k]!]) return false
    for (let k = REC[o + R.HDR_OFF]!; k < REC[o + R.DATA_OFF]!; k++)
      if (of[j++] !== F[k]) return false
    const textOff = REC[o + R.TEXT_OFF]!
    if (textOff >= 0)
      for (let k = textOff; k <= textOff + F[textOff]!; k++) if (of[j++] !== F[k]) return false
  }
  return j === of.length
}

/** The same elements as `matches` compares, written into `sig` (a new layout's template). */
export function takeSignature(core: DecoderCore): void {
  const { CTRL, REC, F } = core
  const n = CTRL[S.NREC]!
  const room = LINK_FIELDS.length + 1 + n * REC_FIELDS.length + F.length
  if (sig.length < room) sig = new Float64Array(room)
  let j = 0
  for (let k = 0; k < LINK_FIELDS.length; k++) sig[j++] = CTRL[LINK_FIELDS[k]!]!
  sig[j++] = CTRL[S.ST]! >= 0 ? 1 : 0
  for (let i = 0; i < n; i++) {
    const o = i * REC_W
    for (let k = 0; k < REC_FIELDS.length; k++) sig[j++] = REC[o + REC_FIELDS[k]!]!
    for (let k = REC[o + R.HDR_OFF]!; k < REC[o + R.DATA_OFF]!; k++) sig[j++] = F[k]!
    const textOff = REC[o + R.TEXT_OFF]!
    if (textOff >= 0) for (let k = textOff; k <= textOff + F[textOff]!; k++) sig[j++] = F[k]!
  }
  sigLength = j
}

/** Where a layout's template is looked for (then compared in full): the meter and its record count. */
export function templateKey(core: DecoderCore): number {
  const { CTRL } = core
  const a = Math.imul(CTRL[S.ID]! + CTRL[S.ID_M]!, 0x9e3779b1)
  return a ^ Math.imul(CTRL[S.DLL_ID]! + CTRL[S.NREC]!, 0x85ebca6b)
}

/** A record's fields the text is made of (header bytes, the decoder's reading of them, where its data is), values aside. */
const REC_FIELDS = [
  R.QTY,
  R.DTYPE,
  R.HDR_OFF,
  R.DATA_OFF,
  R.DATA_LEN,
  R.EXP,
  R.STORAGE,
  R.TARIFF,
  R.SUBUNIT,
  R.FUNC,
  R.MOD,
  R.VIFE0,
  R.TEXT_OFF,
]

const LINK_FIELDS = [
  S.FRAME,
  S.C,
  S.NCI,
  S.CI0,
  S.CI0 + 1,
  S.CI0 + 2,
  S.CI0 + 3,
  S.DLLCRC,
  S.HAS_ID,
  S.ID_M,
  S.VER,
  S.TYPE,
  S.SEC,
  S.ENCRYPTED,
  S.DECRYPTED,
  S.NREC,
  S.SEL,
]

/** The meter's layouts gain `t` (a meter alternating between a long and a short telegram keeps each). */
export function keepFor(key: number, layouts: Template[] | undefined, t: Template): void {
  if (!layouts) {
    if (templates.size >= MAX_METERS) templates.delete(templates.keys().next().value!)
    templates.set(key, (layouts = []))
  }
  if (layouts.length === LAYOUTS_PER_KEY) layouts.shift()
  layouts.push(t)
}

/** Where the layout in `sig` is kept in `shared`. */
export function sigHash(): number {
  let h = sigLength
  for (let j = 0; j < sigLength; j++) h = Math.imul(h ^ (sig[j]! | 0), 0x01000193)
  return h
}

/** The template another meter made of the layout in `sig` (hash `h`), compared in full. */
export function sharedLayout(h: number): Template | undefined {
  for (const t of shared.get(h) ?? NO_LAYOUTS) if (sameSignature(t.sig)) return t
  return undefined
}

/** A layout's template just recorded (`sig` with hash `h`, runs, slots), kept for every meter that sends it. */
export function newLayout(h: number, runs: Uint8Array[], slots: number[]): Template {
  const t: Template = { sig: sig.slice(0, sigLength), runs, slots: Int32Array.from(slots) }
  let same = shared.get(h)
  if (!same) {
    if (shared.size >= MAX_LAYOUTS) shared.delete(shared.keys().next().value!)
    shared.set(h, (same = []))
  }
  same.push(t)
  return t
}

function sameSignature(of: Float64Array): boolean {
  if (of.length !== sigLength) return false
  for (let j = 0; j < sigLength; j++) if (of[j] !== sig[j]) return false
  return true
}

export const NO_LAYOUTS: readonly Template[] = []
