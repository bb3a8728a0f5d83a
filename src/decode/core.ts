// The decoder core as seen by the host: the WASM module (default) or the same
// AssemblyScript sources run as JavaScript (portable mode, bench only).
import { readFileSync, existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { loadKnownFormats } from './known-formats.js'

export interface DecoderCore {
  kind: 'wasm' | 'js'
  IN: Uint8Array
  F: Uint8Array
  IVB: Uint8Array
  CTRL: Int32Array
  REC: Float64Array
  LAYOUT: Int32Array
  FVAL: Float64Array
  begin(len: number): number
  /** `begin` up to the application records (the batch check: asm/decoder.ts `inspect`). */
  inspect(len: number): number
  beginBytes(n: number): number
  resume(mode: number): number
  decodeBinary(n: number): number
  hexToFrame(len: number): number
  /** Compact-frame format table (asm/compact.ts): where formats are copied in and out. */
  FMT: Uint8Array
  fmtScope(scope: number): void
  fmtRead(slot: number): number
  fmtPut(id: number, m: number, sig: number, len: number): number
  /** Well-known format table: headers (DIF/VIF bytes) in FMT for manufacturer and device type. */
  knownPut(m: number, type: number, len: number): number
}

/** Finds decoder.wasm next to this module (dist/decode) or in asm/build (sources under tsx). */
export function wasmPath(): string {
  const candidates = [
    new URL('./decoder.wasm', import.meta.url),
    new URL('../../asm/build/decoder.wasm', import.meta.url),
  ]
  for (const u of candidates) {
    const p = fileURLToPath(u)
    if (existsSync(p)) return p
  }
  throw new Error('decoder.wasm not found: run `npm run build:asm`')
}

let compiled: WebAssembly.Module | undefined

export function loadWasmCore(): DecoderCore {
  compiled ??= new WebAssembly.Module(readFileSync(wasmPath()))
  const inst = new WebAssembly.Instance(compiled, {
    env: {
      abort(_msg: number, _file: number, line: number, col: number) {
        throw new Error(`decoder abort at ${line}:${col}`)
      },
    },
  })
  const x = inst.exports as Record<string, unknown> & { memory: WebAssembly.Memory }
  const fn = (n: string) => x[n] as (...a: number[]) => number
  const buf = x.memory.buffer
  const core: DecoderCore = {
    kind: 'wasm',
    IN: new Uint8Array(buf, fn('inPtr')(), 8192),
    F: new Uint8Array(buf, fn('framePtr')(), 4096),
    IVB: new Uint8Array(buf, fn('ivPtr')(), 32),
    CTRL: new Int32Array(buf, fn('ctrlPtr')(), 64),
    REC: new Float64Array(buf, fn('recPtr')(), 128 * 20),
    LAYOUT: new Int32Array(buf, fn('layoutPtr')(), 1 + 3 * 256),
    FVAL: new Float64Array(buf, fn('fvalPtr')(), 256),
    begin: fn('begin'),
    inspect: fn('inspect'),
    beginBytes: fn('beginBytes'),
    resume: fn('resume'),
    decodeBinary: fn('decodeBinary'),
    hexToFrame: fn('hexToFrame'),
    FMT: new Uint8Array(buf, fn('fmtTmpPtr')(), 96),
    fmtScope: fn('fmtScope'),
    fmtRead: fn('fmtRead'),
    fmtPut: fn('fmtPut'),
    knownPut: fn('knownPut'),
  }
  loadKnownFormats(core)
  return core
}
