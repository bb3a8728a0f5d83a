// Fuzz with a fixed seed: random bytes and mutated corpus telegrams through the
// worker pool. No trap, no hang, no worker crash; every outcome is a status.
import t from 'tap'
import { DecoderPool, type TelegramJob } from '../../src/decode/pool.js'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { loadVectors } from './vectors.js'
import { KNOWN_COMPACT_FORMATS, manufacturerCode } from '../../src/decode/known-formats.js'
import { formatAnalysis } from '../../src/decode/analysis-text.js'
import { analyzeTelegram } from '../../src/decode/analyze.js'

const SEED = 0x5eed1234
const TOTAL = Number(process.env.DECODE_FUZZ_N ?? 200_000)
const BATCH = 2000

function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = s
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const corpus = [...loadVectors('visible.jsonl'), ...loadVectors('crypto-visible.jsonl')].map(
  (v) => ({
    bytes: Buffer.from(v.telegram, 'hex'),
    key: v.key ?? v.default_key,
  }),
)

function gen(r: () => number): TelegramJob {
  const pick = r()
  const ri = (n: number) => Math.floor(r() * n)
  if (pick < 0.15) {
    // random bytes, L-field made consistent half of the time
    const n = 1 + ri(200)
    const b = Buffer.alloc(n)
    for (let i = 0; i < n; i++) b[i] = ri(256)
    if (r() < 0.5) b[0] = (n - 1) & 0xff
    return { hex: b.toString('hex'), key: r() < 0.3 ? '000102030405060708090A0B0C0D0E0F' : null }
  }
  if (pick < 0.18) {
    if (pick >= 0.15 && r() < 0.5) return knownCompact(r, ri)
    // garbage text
    const chars = '0123456789ABCDEFabcdefXZ_ -\u00e9\u4e2d'
    let s = ''
    const n = ri(80)
    for (let i = 0; i < n; i++) s += chars[ri(chars.length)]
    return { hex: s, key: null }
  }
  const c = corpus[ri(corpus.length)]!
  let b = Buffer.from(c.bytes)
  const muts = 1 + ri(4)
  for (let m = 0; m < muts; m++) {
    const op = ri(6)
    if (op === 0 && b.length) b[ri(b.length)] ^= 1 << ri(8)
    else if (op === 1 && b.length) b[ri(b.length)] = ri(256)
    else if (op === 2) b = b.subarray(0, ri(b.length + 1))
    else if (op === 3) {
      const at = ri(b.length + 1)
      b = Buffer.concat([b.subarray(0, at), Buffer.from([ri(256), ri(256)]), b.subarray(at)])
    } else if (op === 4 && b.length > 12) {
      const at = 10 + ri(b.length - 10)
      b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + ri(4))])
    } else if (op === 5 && b.length > 11)
      b[10 + ri(Math.min(20, b.length - 10))] = [
        0x72, 0x7a, 0x78, 0x8c, 0x8d, 0x8e, 0x8f, 0x90, 0x79,
      ][ri(9)]!
  }
  if (b.length && b[0] !== 0x68 && r() < 0.8) b[0] = (b.length - 1) & 0xff
  let key = c.key
  if (key && r() < 0.2) key = '00112233445566778899AABBCCDDEEFF'
  return { hex: r() < 0.5 ? b.toString('hex') : b.toString('hex').toUpperCase(), key }
}

/** A compact frame (CI 79 / 7B) of a product in the known-format table, random data and length. */
function knownCompact(r: () => number, ri: (n: number) => number): TelegramJob {
  const f = KNOWN_COMPACT_FORMATS[ri(KNOWN_COMPACT_FORMATS.length)]!
  const [flag, type] = f.meters[ri(f.meters.length)]!.split(' ') as [string, string]
  const m = manufacturerCode(flag)
  const sig = parseInt(f.signature, 16)
  const head = [
    0x44,
    m & 0xff,
    m >> 8,
    ri(256),
    ri(256),
    ri(256),
    ri(256),
    ri(256),
    parseInt(type, 16),
  ]
  const tpl = r() < 0.7 ? [0x79] : [0x7b, ri(256), 0, 0, 0]
  const data = Array.from({ length: ri(60) }, () => ri(256))
  const body = [...head, ...tpl, sig & 0xff, sig >> 8, ri(256), ri(256), ...data]
  return { hex: Buffer.from([body.length & 0xff, ...body]).toString('hex'), key: null }
}

const STATUSES = new Set(['ok', 'rejected_unconfigured', 'rejected_undecodable', 'invalid'])

t.test(`fuzz ${TOTAL} telegrams, seed ${SEED.toString(16)}`, async (t) => {
  const r = rng(SEED)
  const pool = new DecoderPool({ workers: 2 })
  const start = Date.now()
  const counts: Record<string, number> = {}
  let bad = 0
  let internal = 0
  try {
    const pending: Promise<void>[] = []
    for (let done = 0; done < TOTAL; done += BATCH) {
      const jobs: TelegramJob[] = []
      for (let i = 0; i < Math.min(BATCH, TOTAL - done); i++) jobs.push(gen(r))
      pending.push(
        pool.decodeTelegrams(jobs).then((outs) => {
          if (outs.length !== jobs.length) bad++
          for (const o of outs) {
            counts[o.status] = (counts[o.status] ?? 0) + 1
            if (!STATUSES.has(o.status)) bad++
            else if (o.status === 'ok') {
              if (
                typeof o.value !== 'number' ||
                !Number.isFinite(o.value) ||
                typeof o.identifier !== 'string'
              )
                bad++
            } else if (typeof o.reason !== 'string') bad++
            else if (o.reason.startsWith('internal decoder error')) internal++
          }
        }),
      )
      if (pending.length >= 4) await pending.shift()
    }
    await Promise.all(pending)
  } finally {
    await pool.destroy()
  }
  const secs = (Date.now() - start) / 1000
  t.comment(`fuzz: ${TOTAL} telegrams in ${secs.toFixed(1)} s; outcomes ${JSON.stringify(counts)}`)
  t.equal(bad, 0, 'every outcome is a well-formed status')
  t.equal(internal, 0, 'no decoder trap')
  t.ok(secs < 60, 'under 60 s')
  t.ok(
    (counts.ok ?? 0) > 0 && (counts.invalid ?? 0) > 0 && (counts.rejected_undecodable ?? 0) > 0,
    'all paths reached',
  )
})

t.test('fuzz the core directly (traps would throw here)', async (t) => {
  const r = rng(SEED ^ 0xffff)
  const core = loadWasmCore()
  let thrown = 0
  for (let i = 0; i < 20_000; i++) {
    const j = gen(r)
    try {
      decodeTelegramSync(core, j.hex, j.key)
    } catch {
      thrown++
    }
  }
  t.equal(thrown, 0)
})

t.test('fuzz the analyzer (never throws, a failure always names its layer)', async (t) => {
  const r = rng(SEED ^ 0xabcd)
  const core = loadWasmCore()
  let thrown = 0
  let unnamed = 0
  for (let i = 0; i < 5_000; i++) {
    const j = gen(r)
    try {
      const a = analyzeTelegram(j.hex, j.key, core)
      if (a.status !== 'ok' && !a.failed?.layer) unnamed++
      formatAnalysis(a)
    } catch {
      thrown++
    }
  }
  t.equal(thrown, 0)
  t.equal(unnamed, 0)
})
