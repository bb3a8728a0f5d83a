// Host side of the binary frame decoder (asm/binframe.ts).
import type { DecoderCore } from './core.js'
import type { CompiledLayout, FrameOutcome } from './frame-layout.js'

const B64 = /^[A-Za-z0-9+/]*={0,2}$/
const B64URL = /^[A-Za-z0-9_-]*={0,2}$/

let loaded: CompiledLayout | null = null

function loadLayout(core: DecoderCore, l: CompiledLayout): void {
  if (loaded === l) return
  core.LAYOUT.set(l.codes)
  loaded = l
}

export function decodeFrameSync(core: DecoderCore, l: CompiledLayout, frame: string): FrameOutcome {
  if (typeof frame !== 'string') return { ok: false, error: 'frame must be a string' }
  loadLayout(core, l)
  let n: number
  if (l.encoding === 'hex') {
    if (frame.length !== 2 * l.byteLength) {
      if (!/^[0-9A-Fa-f]*$/.test(frame)) return { ok: false, error: 'must be hexadecimal' }
      return {
        ok: false,
        error: `frame length ${Math.floor(frame.length / 2)} bytes does not match layout length ${l.byteLength}`,
      }
    }
    const IN = core.IN
    for (let i = 0; i < frame.length; i++) {
      const c = frame.charCodeAt(i)
      IN[i] = c > 255 ? 0x3f : c
    }
    n = core.hexToFrame(frame.length)
    if (n < 0) return { ok: false, error: 'must be hexadecimal' }
  } else {
    if (!(B64.test(frame) || B64URL.test(frame)) || frame.replace(/=+$/, '').length % 4 === 1) {
      return { ok: false, error: 'must be base64' }
    }
    const bytes = Buffer.from(frame, 'base64')
    if (bytes.length !== l.byteLength) {
      return {
        ok: false,
        error: `frame length ${bytes.length} bytes does not match layout length ${l.byteLength}`,
      }
    }
    core.F.set(bytes)
    n = bytes.length
  }
  const r = core.decodeBinary(n)
  if (r === -1)
    return {
      ok: false,
      error: `frame length ${n} bytes does not match layout length ${l.byteLength}`,
    }
  if (r < -1) return { ok: false, error: `field ${-r - 2}: invalid BCD digit` }
  const value = core.FVAL[l.valueIndex]! * l.scale
  const status: string[] = []
  if (l.statusIndex >= 0) {
    const bits = core.FVAL[l.statusIndex]!
    for (let b = 0; b < 16; b++) {
      if (Math.floor(bits / 2 ** b) % 2 === 1) status.push(l.statusNames[b] ?? `bit${b}`)
    }
  }
  return { ok: true, value, status }
}
