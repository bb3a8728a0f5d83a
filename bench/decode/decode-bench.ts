// Decode bench: telegrams/s per core for plain, mode 5, mode 7 and ELL frames,
// WASM core vs the same AssemblyScript sources run as JavaScript (portable
// mode), and through the worker pool.
//   node --import tsx bench/decode/decode-bench.ts [--quick]
import { readFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { performance } from 'node:perf_hooks'
import { loadWasmCore, type DecoderCore } from '../../src/decode/core.js'
import { runTelegram, writeHex, parseKey } from '../../src/decode/telegram.js'
import { outcomeOf } from '../../src/decode/telegram-outcome.js'
import { statusFlags } from '../../src/decode/status-flags.js'
import { selectedValue } from '../../src/decode/register-value.js'
import { identifierOf } from '../../src/decode/telegram-identity.js'
import { S } from '../../src/decode/layout.js'
import { RC } from '../../src/decode/layout.js'
import { DecoderPool } from '../../src/decode/pool.js'
import { aesCbcDecrypt, clearKeptKeys, MAX_KEPT_KEYS } from '../../src/decode/crypto.js'
import { randomBytes } from 'node:crypto'

interface Vec {
  telegram: string
  key: string | null
  default_key: string | null
  register: unknown
  expect?: string
  scheme?: string
  link: { scheme?: string; encrypted?: boolean; predecrypted?: boolean }
}

function load(name: string): Vec[] {
  const p = fileURLToPath(new URL(`../../test/fixtures/wmbus/${name}`, import.meta.url))
  return readFileSync(p, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Vec)
}

async function loadJsCore(): Promise<DecoderCore> {
  const shim: string = 'assemblyscript/std/portable/index.js'
  await import(shim)
  const url = pathToFileURL(
    fileURLToPath(new URL('../../asm/build/portable.mjs', import.meta.url)),
  ).href
  const m = (await import(url)) as Record<string, unknown>
  return {
    kind: 'js',
    IN: m.IN as Uint8Array,
    F: m.F as Uint8Array,
    IVB: m.IVB as Uint8Array,
    CTRL: m.CTRL as Int32Array,
    REC: m.REC as Float64Array,
    LAYOUT: m.LAYOUT as Int32Array,
    FVAL: m.FVAL as Float64Array,
    begin: m.begin as (n: number) => number,
    inspect: m.inspect as (n: number) => number,
    beginBytes: m.beginBytes as (n: number) => number,
    resume: m.resume as (n: number) => number,
    decodeBinary: m.decodeBinary as (n: number) => number,
    hexToFrame: m.hexToFrame as (n: number) => number,
    FMT: new Uint8Array(96), // compact formats are not shared in this comparison
    fmtScope: m.fmtScope as (n: number) => void,
    fmtRead: () => 0,
    fmtPut: () => -1,
    knownPut: () => -1, // nor the well-known formats
  }
}

type Job = { hex: string; key: Uint8Array | null; keyHex: string | null }

function sets(): Record<string, Job[]> {
  const core = loadWasmCore()
  const ok = (j: Job) => {
    writeHex(core, j.hex)
    return runTelegram(core, j.hex.length, j.key) === RC.OK
  }
  const mk = (v: Vec): Job => {
    const keyHex = v.key ?? v.default_key
    return { hex: v.telegram, keyHex, key: parseKey(keyHex) as Uint8Array | null }
  }
  const vis = load('visible.jsonl')
  const cr = load('crypto-visible.jsonl').filter((v) => v.expect === 'ok')
  return {
    plain: vis
      .filter((v) => v.link.scheme === 'none' && !v.link.encrypted)
      .map(mk)
      .filter(ok),
    mode5: cr.filter((v) => v.scheme === 'mode5').map(mk),
    mode7: cr.filter((v) => v.scheme === 'mode7').map(mk),
    ell: cr.filter((v) => v.scheme === 'ell_ctr').map(mk),
  }
}

/** Single-thread rate: decode to the register (no records JSON) and to the full outcome. */
function rate(core: DecoderCore, jobs: Job[], ms: number, full: boolean): number {
  let n = 0
  let sink = 0
  const end = performance.now() + ms
  const t0 = performance.now()
  while (performance.now() < end) {
    for (let k = 0; k < 200; k++) {
      const j = jobs[n % jobs.length]!
      const len = writeHex(core, j.hex)
      const code = runTelegram(core, len, j.key)
      if (full) {
        const o = outcomeOf(core, code)
        sink += o.status.length
      } else if (code === RC.OK) {
        // what the pool returns eagerly: identifier, value, unit, flags, statuses
        sink += selectedValue(core).value + identifierOf(core).length
        sink += statusFlags(core.CTRL[S.ST]!, core.CTRL[S.ERRFLAGS]!).rawFlags.length
      }
      n++
    }
  }
  const secs = (performance.now() - t0) / 1000
  if (sink === -1) console.log(sink)
  return Math.round(n / secs)
}

async function poolRate(
  jobs: Job[],
  workers: number,
  total: number,
  batch: number,
): Promise<number> {
  const pool = new DecoderPool({ workers })
  try {
    const mk = (k: number) =>
      Array.from({ length: batch }, (_, i) => ({
        hex: jobs[(k + i) % jobs.length]!.hex,
        key: jobs[(k + i) % jobs.length]!.keyHex,
      }))
    await pool.decodeTelegrams(mk(0)) // warm up the workers
    const t0 = performance.now()
    const inflight: Promise<unknown>[] = []
    for (let done = 0; done < total; done += batch) {
      inflight.push(pool.decodeTelegrams(mk(done)))
      if (inflight.length >= workers * 2) await inflight.shift()
    }
    await Promise.all(inflight)
    return Math.round(total / ((performance.now() - t0) / 1000))
  } finally {
    await pool.destroy()
  }
}

export async function runDecodeBench({ quick }: { quick: boolean }): Promise<object> {
  const ms = quick ? 300 : 1500
  const s = sets()
  const wasm = loadWasmCore()
  const js = await loadJsCore()
  const perCore: Record<string, Record<string, number>> = {}
  for (const [name, jobs] of Object.entries(s)) {
    rate(wasm, jobs, 100, true)
    rate(js, jobs, 100, true)
    perCore[name] = {
      wasm_decoded_per_s: rate(wasm, jobs, ms, false),
      js_decoded_per_s: rate(js, jobs, ms, false),
      wasm_with_records_json_per_s: rate(wasm, jobs, ms, true),
      js_with_records_json_per_s: rate(js, jobs, ms, true),
    }
  }
  // More encrypted meters than a thread keeps ciphers for (crypto.ts): the room taken by other
  // keys, every decrypt of these sets its cipher up (the vectors' few keys would all be kept).
  const iv = Buffer.alloc(16)
  clearKeptKeys()
  for (let i = 0; i < MAX_KEPT_KEYS; i++) aesCbcDecrypt(randomBytes(16), iv, iv)
  for (const name of ['mode5', 'mode7', 'ell'])
    perCore[name]!.wasm_decoded_no_room_per_s = rate(wasm, s[name]!, ms, false)
  clearKeptKeys()
  const workers = 2
  const total = quick ? 40_000 : 200_000
  const pool: Record<string, number> = {}
  for (const name of ['plain', 'mode5', 'mode7', 'ell']) {
    pool[`${name}_per_s`] = await poolRate(s[name]!, workers, quick ? total / 4 : total, 1000)
  }
  return {
    note: 'per_core = one thread on this machine; pool = 2 workers, batches of 1000, raw payload JSON built in the worker',
    vectors: Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v.length])),
    per_core: perCore,
    pool: { workers, ...pool },
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const res = await runDecodeBench({ quick: process.argv.includes('--quick') })
  console.log(JSON.stringify(res, null, 2))
}
