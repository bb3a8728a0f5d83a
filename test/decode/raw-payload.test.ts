// The stored raw payload of a decoded telegram is written in the worker as the UTF-8 bytes of
// a TabSeparated field (payload-bytes.ts, straight into the result buffer by wire.ts), from a
// template per layout once a layout has been seen. It must be byte-identical to
// JSON.stringify({ telegram, decoded: { link, records } }) of the record objects, escaped for
// TabSeparated, for every vector and for fuzzed frames, and survive the trip to the main thread.
import t from 'tap'
import { DecoderPool, type TelegramJob } from '../../src/decode/pool.js'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync, parseKey, runTelegram, writeHex } from '../../src/decode/telegram.js'
import { buildRecords, linkInfo } from '../../src/decode/payload-records.js'
import { RC } from '../../src/decode/layout.js'
import { decodedTsvBound, writeDecodedTsv } from '../../src/decode/payload-bytes.js'
import { loadVectors } from './vectors.js'

const vectors = [...loadVectors('visible.jsonl'), ...loadVectors('crypto-visible.jsonl')]

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

/** Mutated corpus frames, L-field kept consistent (record bytes, VIFs, text units, dates …). */
function mutated(n: number, seed: number): TelegramJob[] {
  const r = rng(seed)
  const ri = (k: number) => Math.floor(r() * k)
  const out: TelegramJob[] = []
  for (let i = 0; i < n; i++) {
    const v = vectors[ri(vectors.length)]!
    const b = Buffer.from(v.telegram, 'hex')
    const muts = ri(4)
    for (let m = 0; m < muts; m++) {
      const at = 10 + ri(Math.max(1, b.length - 10))
      if (at < b.length) b[at] = r() < 0.5 ? ri(256) : b[at]! ^ (1 << ri(8))
    }
    const hex = b.toString('hex')
    out.push({ hex: r() < 0.5 ? hex : hex.toUpperCase(), key: v.key ?? v.default_key })
  }
  return out
}

/**
 * Corpus frames of other meters: the link-layer identity (and a long TPL header's) renumbered,
 * so meters of one layout share its template and each must still write its own identity.
 */
function renumbered(n: number, seed: number): TelegramJob[] {
  const r = rng(seed)
  const wireless = vectors.filter((v) => !v.telegram.toLowerCase().startsWith('68'))
  const out: TelegramJob[] = []
  for (let i = 0; i < n; i++) {
    const v = wireless[Math.floor(r() * wireless.length)]!
    const b = Buffer.from(v.telegram, 'hex')
    const id = Buffer.from(
      Math.floor(r() * 1e8)
        .toString()
        .padStart(8, '0'),
      'hex',
    ).reverse()
    id.copy(b, 4)
    if (b[10] === 0x72 && b.length > 15) id.copy(b, 11)
    out.push({ hex: b.toString('hex'), key: v.key ?? v.default_key })
  }
  return out
}

t.test('the bytes written equal JSON.stringify of linkInfo + buildRecords', async (t) => {
  const core = loadWasmCore()
  let ok = 0
  const jobs = [
    ...vectors.flatMap((v) =>
      [...v.prior_telegrams, v.telegram].map((hex) => ({ hex, key: v.key ?? v.default_key })),
    ),
    ...mutated(30_000, 0xc0ffee),
    ...renumbered(10_000, 0xbeef),
  ]
  let bad = 0
  for (const j of jobs) {
    const k = parseKey(j.key)
    if (k === 'bad') continue
    const len = writeHex(core, j.hex)
    if (runTelegram(core, len, k) !== RC.OK) continue
    ok++
    const want = JSON.stringify({ link: linkInfo(core), records: buildRecords(core) })
    // as the TabSeparated field the readings INSERT carries: backslashes doubled
    const field = Buffer.from(want.replaceAll('\\', '\\\\'))
    // a layout seen first (its template recorded), then again (written from the template),
    // into exactly the room its bound promises
    const room = decodedTsvBound(core)
    for (const pass of ['first', 'again']) {
      const buf = new Uint8Array(room)
      const end = writeDecodedTsv(core, buf, 0)
      const bytes = Buffer.from(buf.subarray(0, Math.min(end, room)))
      if ((end > room || !bytes.equals(field)) && bad++ < 5)
        t.equal(bytes.toString(), field.toString(), `${pass}, ${end} of ${room} bytes: ${j.hex}`)
    }
  }
  t.equal(bad, 0, `${ok} decoded frames compared`)
  t.ok(ok > 1000, `${ok} frames decoded`)
})

t.test('pool rawPayload = sync raw payload, records parsed on read', async (t) => {
  // one worker and one sync core fed the same sequence hold the same compact-frame table
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  const core = loadWasmCore()
  const jobs = [
    ...vectors.flatMap((v) =>
      [...v.prior_telegrams, v.telegram].map((hex) => ({ hex, key: v.key ?? v.default_key })),
    ),
    ...mutated(20_000, 0xbeef),
  ]
  let bad = 0
  let ok = 0
  let wide = 0
  for (let i = 0; i < jobs.length; i += 1000) {
    const batch = jobs.slice(i, i + 1000)
    const outs = await pool.decodeTelegrams(batch)
    batch.forEach((j, k) => {
      const want = decodeTelegramSync(core, j.hex, j.key)
      const got = outs[k]!
      if (want.status !== 'ok' || got.status !== 'ok') {
        if (got.status !== want.status && bad++ < 5) t.equal(got.status, want.status, j.hex)
        return
      }
      ok++
      if (/[^\x00-\x7f]/.test(want.rawPayload)) wide++
      const same =
        got.rawPayload === want.rawPayload &&
        got.rawJson === JSON.stringify(want.rawPayload) &&
        got.rawJson === want.rawJson &&
        got.rawPayload === JSON.stringify({ telegram: j.hex, decoded: want.records }) &&
        got.identifier === want.identifier &&
        Object.is(got.value, want.value) &&
        got.unit === want.unit
      if (!same && bad++ < 5) t.same(got, want, j.hex)
    })
  }
  t.equal(bad, 0, `${ok} decoded telegrams identical (${wide} with non-ASCII text)`)
  const v = vectors.find((x) => x.register && x.prior_telegrams.length === 0 && !x.key)!
  const [o] = await pool.decodeTelegrams([{ hex: v.telegram, key: null }])
  t.equal(o!.status, 'ok')
  if (o!.status === 'ok') {
    const r = o!.records as { link: Record<string, unknown>; records: unknown[] }
    t.equal(r.link.id, v.id)
    t.same(JSON.parse(o!.rawPayload), { telegram: v.telegram, decoded: r })
  }
})
