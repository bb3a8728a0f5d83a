// wM-Bus frames as a fleet of distinct meters sends them. The fixture frames are a few dozen
// recordings; sent as they are by thousands of meters, every meter would share one of 40
// link-layer identities and send the same bytes each time, so per-meter decoder state never
// grew and the gateway-repeat check had to be switched off (it would have answered every
// frame after the first `duplicate`). Here each meter gets its own identity (its 8 BCD
// digits written over the fixture's), and its k-th telegram the access number k mod 256 and
// its main register the fixture's value plus k, so no two telegrams of a meter are alike.
// Encrypted fixtures (security mode 5) are decrypted once with their key and encrypted again
// per telegram (AES-CBC, IV from the meter's header and access number), a request's
// telegrams of one key a block at a time through one ECB cipher: a cipher object per
// telegram would cost the load generator more than the server's decode.
//
// Where those bytes sit is read from the decoder itself (the WASM core) and checked by
// decoding a changed frame; fixtures without CRCs only (the bench's all are: L + 1 bytes).
import { createCipheriv, type Cipheriv } from 'node:crypto'
import { loadWasmCore, type DecoderCore } from '../../src/decode/core.js'
import { D, R, RC, REC_W, S } from '../../src/decode/layout.js'
import { parseKey, runTelegram, writeHex } from '../../src/decode/telegram.js'
import { selectedValue } from '../../src/decode/register-value.js'
import { identifierOf } from '../../src/decode/telegram-identity.js'

export interface FixtureFrame {
  source: string
  hex: string
  key: string | null
}

/** Where a fixture's changing bytes are: plain data, passed to the load generator. */
export interface FrameShape {
  source: string
  /** the frame with its encrypted part decrypted (hex) */
  plain: string
  key: string | null
  /** offsets of the 4-byte identities (link layer; a long TPL header's too) */
  idOffsets: number[]
  /** offsets of the access numbers (TPL; an ELL's too) */
  accOffsets: number[]
  /** the main register's data bytes and coding, and its value there as a raw integer */
  value: { off: number; len: number; bcd: boolean; raw: number }
  /** mode 5: the encrypted bytes, and the 8 header bytes of the IV (M, identity, version, type) */
  cipher: { off: number; len: number; ivHead: number[] } | null
}

const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase()

function decode(core: DecoderCore, hex: string, key: string | null): number {
  writeHex(core, hex)
  return runTelegram(core, hex.length, parseKey(key) as Uint8Array | null)
}

function readRaw(b: Uint8Array, off: number, len: number, bcd: boolean): number {
  let v = 0
  for (let i = len - 1; i >= 0; i--) {
    const x = b[off + i]!
    if (bcd) {
      if ((x & 15) > 9 || x >> 4 > 9) return -1
      v = v * 100 + (x >> 4) * 10 + (x & 15)
    } else v = v * 256 + x
  }
  return v
}

function writeRaw(b: Uint8Array, off: number, len: number, bcd: boolean, v: number): void {
  for (let i = 0; i < len; i++) {
    if (bcd) {
      const d = v % 100
      b[off + i] = (Math.floor(d / 10) << 4) | (d % 10)
      v = Math.floor(v / 100)
    } else {
      b[off + i] = v % 256
      v = Math.floor(v / 256)
    }
  }
}

/** The largest raw value a register of `len` bytes holds, plus one. */
const span = (len: number, bcd: boolean) => (bcd ? 100 : 256) ** len

/** 8 decimal digits as the 4 BCD bytes of a wM-Bus identity (least significant first). */
function writeId(b: Uint8Array, off: number, id: number): void {
  writeRaw(b, off, 4, true, id % 100_000_000)
}

/**
 * The shapes of the fixture frames that can vary, and why each other one cannot (it is left
 * out): every shape is checked by decoding a changed frame.
 */
export function frameShapes(fixtures: FixtureFrame[]): { shapes: FrameShape[]; leftOut: string[] } {
  const core = loadWasmCore()
  const shapes: FrameShape[] = []
  const leftOut: string[] = []
  for (const fx of fixtures) {
    try {
      shapes.push(shapeOf(core, fx))
    } catch (e) {
      leftOut.push((e as Error).message)
    }
  }
  if (shapes.length === 0) throw new Error(`no fixture frame can vary: ${leftOut.join('; ')}`)
  return { shapes, leftOut }
}

function shapeOf(core: DecoderCore, fx: FixtureFrame): FrameShape {
  const { CTRL, REC, F, IVB } = core
  const bytes = Buffer.from(fx.hex, 'hex')
  if (bytes[0]! + 1 !== bytes.length) throw new Error(`${fx.source}: a frame with CRCs`)
  // Asked for a key, the decoder has read the header: the scheme and the IV it would use.
  const asked = decode(core, fx.hex, null) === RC.UNCONFIGURED
  const ivSeen = asked ? IVB.slice(0, 16) : null
  const scheme = asked ? CTRL[S.SCHEME] : 0
  if (decode(core, fx.hex, fx.key) !== RC.OK) throw new Error(`${fx.source}: does not decode`)
  const plain = F.slice(0, bytes.length)
  const tpl = CTRL[S.TPL_OFF]!
  const long = plain[tpl] === 0x72
  // 0x78: no TPL header, so no access number (its telegrams differ by their value only)
  if (plain[tpl] !== 0x72 && plain[tpl] !== 0x7a && plain[tpl] !== 0x78)
    throw new Error(`${fx.source}: TPL CI ${plain[tpl]?.toString(16)}`)
  const idOffsets = long ? [4, tpl + 1] : [4]
  const accOffsets = plain[tpl] === 0x78 ? [] : [long ? tpl + 9 : tpl + 1]
  if (CTRL[S.ELL_CI]! > 0) accOffsets.push(12)
  if (accOffsets.length && plain[accOffsets[0]!] !== CTRL[S.ACC])
    throw new Error(`${fx.source}: access number`)
  const o = CTRL[S.SEL]! * REC_W
  const off = REC[o + R.DATA_OFF]!
  const len = REC[o + R.DATA_LEN]!
  const coding = plain[REC[o + R.HDR_OFF]!]! & 15
  const bcd = coding >= 9 && coding <= 14
  if (REC[o + R.DTYPE] !== D.NUMBER || coding === 5 || len < 2)
    throw new Error(`${fx.source}: main register not an integer of 2 bytes or more`)
  const raw = readRaw(plain, off, len, bcd)
  if (raw < 0) throw new Error(`${fx.source}: main register not plain BCD`)
  let cipher: FrameShape['cipher'] = null
  if (fx.key) {
    if (scheme !== 1) throw new Error(`${fx.source}: not security mode 5`)
    const c = { off: CTRL[S.CIPH_OFF]!, len: CTRL[S.CIPH_LEN]! }
    const head = long ? tpl + 1 : 2
    // IV: M (2), identity (4), version, type; in a long header the M follows the identity
    const ivHead = long
      ? [head + 4, head + 5, head, head + 1, head + 2, head + 3, head + 6, head + 7]
      : [2, 3, 4, 5, 6, 7, 8, 9]
    for (let i = 0; i < 16; i++)
      if (ivSeen?.[i] !== plain[i < 8 ? ivHead[i]! : accOffsets[0]!])
        throw new Error(`${fx.source}: IV not where expected`)
    if (c.len % 16 !== 0 || c.off + c.len > plain.length)
      throw new Error(`${fx.source}: encrypted part not whole blocks inside the frame`)
    cipher = { ...c, ivHead }
  }
  const shape: FrameShape = {
    source: fx.source,
    plain: hexOf(plain),
    key: fx.key,
    idOffsets,
    accOffsets,
    value: { off, len, bcd, raw },
    cipher,
  }
  // Checked: changed frames decode to their new identity, and the value they carry rises
  // with k (also where its low byte wraps: a register the decoder reads big-endian does not).
  const frames = new FleetFrames([shape], [12_345_678])
  let last = -Infinity
  for (const k of [1, 2, 255, 256, 257]) {
    if (decode(core, frames.request([0], k)[0]!, fx.key) !== RC.OK)
      throw new Error(`${fx.source}: a changed frame does not decode`)
    const value = selectedValue(core).value
    if (identifierOf(core) !== '12345678' || !(value > last))
      throw new Error(`${fx.source}: a changed frame's identity or value (${value} after ${last})`)
    last = value
  }
  return shape
}

/**
 * The telegrams of a fleet: meter m is fixture `m mod shapes.length` with identity ids[m].
 * `request(meters, k)` gives those meters' k-th telegrams (hex), in order.
 */
export class FleetFrames {
  private readonly plains: Buffer[]
  private readonly ciphers = new Map<string, Cipheriv>()

  constructor(
    private readonly shapes: FrameShape[],
    ids: number[],
  ) {
    this.plains = ids.map((id, m) => {
      const s = shapes[m % shapes.length]!
      const b = Buffer.from(s.plain, 'hex')
      for (const off of s.idOffsets) writeId(b, off, id)
      return b
    })
  }

  request(meters: number[], k: number): string[] {
    const out = new Array<string>(meters.length)
    const sealed = new Map<number, number[]>()
    for (let j = 0; j < meters.length; j++) {
      const m = meters[j]!
      const s = this.shapes[m % this.shapes.length]!
      const b = this.plains[m]!
      for (const off of s.accOffsets) b[off] = k & 255
      const v = s.value
      writeRaw(b, v.off, v.len, v.bcd, (v.raw + k) % span(v.len, v.bcd))
      if (!s.cipher) out[j] = b.toString('hex')
      else {
        const list = sealed.get(m % this.shapes.length)
        if (list) list.push(j)
        else sealed.set(m % this.shapes.length, [j])
      }
    }
    for (const [f, js] of sealed) this.seal(f, js, meters, out)
    return out
  }

  /** AES-CBC over the `js`-th telegrams of fixture f, one block of all of them per call. */
  private seal(f: number, js: number[], meters: number[], out: string[]): void {
    const s = this.shapes[f]!
    const c = s.cipher!
    let ecb = this.ciphers.get(s.key!)
    if (!ecb) {
      ecb = createCipheriv('aes-128-ecb', Buffer.from(s.key!, 'hex'), null).setAutoPadding(false)
      this.ciphers.set(s.key!, ecb)
    }
    const frames = js.map((j) => Buffer.from(this.plains[meters[j]!]!))
    const prev = Buffer.alloc(16 * js.length)
    frames.forEach((b, i) => {
      for (let n = 0; n < 8; n++) prev[16 * i + n] = b[c.ivHead[n]!]!
      prev.fill(b[s.accOffsets[0]!]!, 16 * i + 8, 16 * i + 16)
    })
    for (let at = c.off; at < c.off + c.len; at += 16) {
      frames.forEach((b, i) => {
        for (let n = 0; n < 16; n++) prev[16 * i + n] = prev[16 * i + n]! ^ b[at + n]!
      })
      const sealedBlocks = ecb.update(prev)
      frames.forEach((b, i) => sealedBlocks.copy(b, at, 16 * i, 16 * i + 16))
      sealedBlocks.copy(prev)
    }
    frames.forEach((b, i) => (out[js[i]!] = b.toString('hex')))
  }
}
