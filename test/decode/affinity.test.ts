// Meter affinity of the decoder pool: a meter's compact frames (CI 7B here)
// decode with WORKERS > 1 whatever the batches look like, because every
// telegram of one meter goes to the worker that learnt its format.
import t from 'tap'
import { DecoderPool } from '../../src/decode/pool.js'
import { meterAffinity, affinityIndex } from '../../src/decode/affinity.js'
import { crc16 } from '../helpers/wmbus.js'
import { loadVectors, expectedCanonical, close } from './vectors.js'

const vectors = loadVectors('visible.jsonl')
// iPerl water meter: 18 44 AE4C 44552233 68 07 | 7A 55 00 0000 | 04 13 <u32 l> 02 3B <u16>
const iperl = vectors.find((v) => v.driver === 'iperl' && v.telegram.startsWith('1844AE4C'))!

function le32(n: number): string {
  return Buffer.from(new Uint32Array([n]).buffer).toString('hex')
}
function withL(body: string): string {
  return (body.length / 2).toString(16).padStart(2, '0') + body
}

/** Splits the records after the 7A header into [header hex, data hex] (fixed-length DIFs only). */
function records(hex: string): Array<[string, string]> {
  const b = Buffer.from(hex, 'hex')
  let p = 15 // L C M(2) A(6) CI ACC ST CF(2)
  const out: Array<[string, string]> = []
  while (p < b.length) {
    if (b[p] === 0x2f) {
      p++
      continue
    }
    const h0 = p
    const dif = b[p++]!
    while (b[p - 1]! & 0x80 && p < b.length) p++ // DIFEs
    do p++
    while (b[p - 1]! & 0x80 && p < b.length) // VIF, VIFEs
    const t = dif & 15
    const len = t <= 4 ? t : t === 5 ? 4 : t === 6 ? 6 : t === 7 ? 8 : t - 8
    if (t === 13 || t === 15 || t === 8 || t === 0) throw new Error('not a fixed-length record')
    out.push([b.subarray(h0, p).toString('hex'), b.subarray(p, p + len).toString('hex')])
    p += len
  }
  return out
}

const RECS = records(iperl.telegram) // [['0413', <litres>], ['023b', '0000']]
const HEADERS = RECS.map((r) => r[0]).join('')
const SIG = crc16(Buffer.from(HEADERS, 'hex'), 0, HEADERS.length / 2)
const SIG_LE = Buffer.from([SIG & 0xff, SIG >> 8]).toString('hex')

function idHex(id: number): string {
  return Buffer.from(String(id).padStart(8, '0'), 'hex').reverse().toString('hex')
}
/** The iPerl vector with another meter id and volume register. */
function full(id: number, litres: number): string {
  const head = iperl.telegram.slice(2, 8) + idHex(id) + iperl.telegram.slice(16, 30)
  return withL(head + RECS.map(([h, d], i) => h + (i === 0 ? le32(litres) : d)).join(''))
}
/** Its compact form: CI 7B (short header), signature, data CRC (not checked), data only. */
function compact(id: number, litres: number): string {
  const head = iperl.telegram.slice(2, 8) + idHex(id) + iperl.telegram.slice(16, 20) + '7B'
  const data = RECS.map(([, d], i) => (i === 0 ? le32(litres) : d)).join('')
  return withL(head + iperl.telegram.slice(22, 30) + SIG_LE + '0000' + data)
}
/** Wireless format A: a CRC after the first 10 bytes and after every further 16. */
function formatA(hex: string): string {
  const b = Buffer.from(hex, 'hex')
  const parts: Buffer[] = []
  for (let p = 0; p < b.length; p = p === 0 ? 10 : p + 16) {
    const blk = b.subarray(p, p === 0 ? 10 : p + 16)
    const c = crc16(blk, 0, blk.length)
    parts.push(blk, Buffer.from([c >> 8, c & 0xff]))
  }
  return Buffer.concat(parts).toString('hex').toUpperCase()
}

const METERS = Array.from({ length: 16 }, (_, i) => 40_000_000 + i * 7919)
const noise = vectors
  .filter((v) => v.register && v.prior_telegrams.length === 0 && v.link.scheme === 'none')
  .slice(0, 30)
  .map((v) => ({ hex: v.telegram, key: v.key ?? v.default_key }))

/** Deterministic shuffle (LCG) so a failure names its seed. */
function shuffle<T>(xs: T[], seed: number): T[] {
  const a = xs.slice()
  let s = seed
  for (let i = a.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0
    const j = s % (i + 1)
    ;[a[i], a[j]] = [a[j]!, a[i]!]
  }
  return a
}

t.test('the synthesized frames decode on one decoder', async (t) => {
  t.equal(iperl.register!.unit, 'm3')
  t.same(
    RECS.map((r) => r[0]),
    ['0413', '023b'],
  )
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  const [v, before, f, c] = await pool.decodeTelegrams([
    { hex: iperl.telegram, key: null },
    { hex: compact(METERS[0]!, 2000), key: null },
    { hex: full(METERS[0]!, 1000), key: null },
    { hex: compact(METERS[0]!, 2000), key: null },
  ])
  t.ok(v!.status === 'ok' && close(v!.value, expectedCanonical(iperl.register!).value))
  t.equal(before!.status, 'rejected_undecodable', 'no full frame seen yet')
  t.ok(f!.status === 'ok' && f!.value === 1 && f!.identifier === String(METERS[0]))
  t.ok(c!.status === 'ok' && c!.value === 2 && c!.identifier === String(METERS[0]))
})

t.test('route: one meter, one worker', async (t) => {
  const seen = new Set<number>()
  for (const id of METERS) {
    const r = meterAffinity(full(id, 1))
    t.equal(meterAffinity(compact(id, 5)), r, `compact ${id}`)
    t.equal(meterAffinity(full(id, 99)), r, 'independent of the data')
    t.equal(meterAffinity(formatA(full(id, 1))), r, 'format A as format B/none')
    t.equal(meterAffinity(formatA(compact(id, 5))), r)
    t.equal(meterAffinity(full(id, 1).toLowerCase()), r, 'hex case')
    seen.add(affinityIndex(full(id, 1), 2))
  }
  t.same([...seen].sort(), [0, 1], 'the meters are spread over both workers')
  // a long TPL header (CI 72 / 73) names the meter behind a converter: its
  // identity counts, not the converter's DLL address
  const tpl = (ci: string, conv: string) =>
    withL('4424340' + conv + '0000000137' + ci + idHex(METERS[3]!) + 'AE4C6807550000002F2F')
  t.equal(meterAffinity(tpl('72', '1')), meterAffinity(tpl('73', '2')))
  t.equal(
    meterAffinity(tpl('72', '1')),
    meterAffinity(withL('44AE4C' + idHex(METERS[3]!) + '6807' + '7A550000002F2F')),
  )
  // anything else still gets a worker
  for (const x of ['', 'zz', '68', 'nothex-nothex-nothex-nothex', 12 as unknown as string])
    t.ok(affinityIndex(x, 3) >= 0 && affinityIndex(x, 3) < 3)
})

interface Job {
  hex: string
  key: string | null
  expect?: { id: string; value: number } // the test meters' frames
}
const fullJob = (id: number, litres: number): Job => ({
  hex: full(id, litres),
  key: null,
  expect: { id: String(id), value: litres / 1000 },
})
const compactJob = (id: number, litres: number): Job => ({
  hex: compact(id, litres),
  key: null,
  expect: { id: String(id), value: litres / 1000 },
})

async function decode(pool: DecoderPool, jobs: Job[]): Promise<string[]> {
  const outs = await pool.decodeTelegrams(jobs.map(({ hex, key }) => ({ hex, key })))
  const bad: string[] = []
  if (outs.length !== jobs.length) bad.push(`length ${outs.length} != ${jobs.length}`)
  jobs.forEach((j, i) => {
    const o = outs[i]!
    if (!j.expect) {
      // other vectors keep their place in the batch
      if (o.status === 'ok' && !(o.identifier.length > 0)) bad.push(`${i}: no identifier`)
      return
    }
    if (o.status !== 'ok' || o.identifier !== j.expect.id || !close(o.value, j.expect.value))
      bad.push(`${i} ${j.hex.slice(0, 30)}: ${JSON.stringify(o)}`)
  })
  return bad
}

t.test('2 workers: full frame first, then compact frames, any batch composition', async (t) => {
  // 1. full frames in one batch; each compact frame alone in its own batch, all
  //    in flight at once (the old least-busy routing spread these over both workers)
  {
    const pool = new DecoderPool({ workers: 2 })
    t.equal(pool.threads, 2)
    t.same(
      await decode(
        pool,
        METERS.map((id) => fullJob(id, 1000)),
      ),
      [],
    )
    const singles = await Promise.all(
      METERS.flatMap((id, k) =>
        [1, 2, 3].map((r) => decode(pool, [compactJob(id, 1000 + k * 10 + r)])),
      ),
    )
    t.same(singles.flat(), [], 'single-frame batches')
    // mixed batches: compact frames of all meters and other vectors, shuffled
    for (let seed = 1; seed <= 4; seed++) {
      const jobs = shuffle([...METERS.map((id, k) => compactJob(id, 5000 + k)), ...noise], seed)
      t.same(await decode(pool, jobs), [], `mixed batch, seed ${seed}`)
    }
    await pool.destroy()
  }
  // 2. one batch: each meter's full frame somewhere before its compact frames,
  //    everything else shuffled around them
  for (let seed = 1; seed <= 2; seed++) {
    const pool = new DecoderPool({ workers: 2 })
    const order = shuffle(
      [
        ...METERS.flatMap((id) => [id, id, id]), // first occurrence = full frame
        ...noise.map((_, k) => -1 - k),
      ],
      seed,
    )
    const seen = new Set<number>()
    const jobs = order.map((x, k) => {
      if (x < 0) return noise[-1 - x]!
      if (seen.has(x)) return compactJob(x, 7000 + k)
      seen.add(x)
      return fullJob(x, 6000 + k)
    })
    t.same(await decode(pool, jobs), [], `one batch, seed ${seed}`)
    await pool.destroy()
  }
  // 3. batches submitted without waiting: the batch with the full frames is
  //    queued first on each worker, so the compact frames after it decode
  {
    const pool = new DecoderPool({ workers: 2 })
    const fulls = shuffle(
      METERS.map((id) => fullJob(id, 100)),
      9,
    )
    const runs = [
      decode(pool, [...fulls.slice(0, 8), ...noise.slice(0, 5)]),
      decode(pool, fulls.slice(8)),
      ...METERS.map((id, k) =>
        decode(pool, shuffle([compactJob(id, 300 + k), ...noise.slice(k, k + 3)], k + 1)),
      ),
      decode(
        pool,
        METERS.map((id) => compactJob(id, 400)),
      ),
    ]
    t.same((await Promise.all(runs)).flat(), [], 'concurrent batches')
    await pool.destroy()
  }
})

t.test('after a worker crash the batch fails, the pool recovers, affinity holds', async (t) => {
  const pool = new DecoderPool({ workers: 2 })
  t.teardown(() => pool.destroy())
  t.same(
    await decode(
      pool,
      METERS.map((id) => fullJob(id, 1)),
    ),
    [],
  )
  await t.rejects(pool.crashOneWorkerForTest())
  // the crashed worker's replacement lost its formats: sending the full frames
  // again (as meters do periodically) makes their compact frames decode again
  t.same(
    await decode(
      pool,
      METERS.map((id) => fullJob(id, 2)),
    ),
    [],
  )
  t.same(await decode(pool, shuffle([...METERS.map((id) => compactJob(id, 3)), ...noise], 5)), [])
  t.equal(pool.threads, 2)
})
