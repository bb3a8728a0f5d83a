// Decoder pool: batches, ordering, frames, worker crash recovery.
import t from 'tap'
import { DecoderPool, type TelegramOutcome } from '../../src/decode/pool.js'
import { inspectTelegram } from '../../src/decode/inspect.js'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync, writeHex } from '../../src/decode/telegram.js'
import { fingerprintOf, identifierOf } from '../../src/decode/telegram-identity.js'
import { manufacturer } from '../../src/decode/telegram-text.js'
import { RC, S } from '../../src/decode/layout.js'
import { loadVectors, expectedCanonical, close } from './vectors.js'

const crypto = loadVectors('crypto-visible.jsonl')
const plain = loadVectors('visible.jsonl').filter(
  (v) => v.register && v.prior_telegrams.length === 0,
)

t.test('batches keep job order and match the single-telegram results', async (t) => {
  const pool = new DecoderPool({ workers: 2 })
  t.teardown(() => pool.destroy())
  const jobs = [
    ...crypto.map((v) => ({ hex: v.telegram, key: v.key })),
    { hex: 'nothex', key: null },
    { hex: crypto[0]!.telegram, key: null },
  ]
  const res = await pool.decodeTelegrams(jobs)
  t.equal(res.length, jobs.length)
  crypto.forEach((v, i) => {
    const o = res[i]!
    if (v.expect === 'ok') {
      t.equal(o.status, 'ok', v.source)
      if (o.status === 'ok') {
        t.ok(close(o.value, expectedCanonical(v.register!).value))
        t.equal(o.identifier, v.id)
      }
    } else t.equal(o.status, 'rejected_undecodable')
  })
  t.same(res[crypto.length], { status: 'invalid', reason: 'must be hexadecimal' })
  t.equal(res[crypto.length + 1]!.status, 'rejected_unconfigured')
  // many concurrent batches, ordering per batch
  const batches = await Promise.all(
    Array.from({ length: 8 }, (_, b) =>
      pool.decodeTelegrams(
        plain
          .slice(b * 10, b * 10 + 40)
          .map((v) => ({ hex: v.telegram, key: v.key ?? v.default_key })),
      ),
    ),
  )
  batches.forEach((outs, b) => {
    outs.forEach((o, i) => {
      const v = plain[b * 10 + i]!
      if (o.status === 'ok')
        t.equal(
          o.identifier,
          inspectTelegram(v.telegram).ok
            ? (inspectTelegram(v.telegram) as { identifier: string }).identifier
            : '?',
        )
    })
  })
  t.same(await pool.decodeTelegrams([]), [])
  t.same(await pool.decodeTelegrams([{ hex: crypto[0]!.telegram, key: 'short' }]), [
    { status: 'rejected_undecodable', reason: 'key must be 32 hex digits (or 16 for a DES key)' },
  ])
})

t.test('frames through the pool', async (t) => {
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  const res = await pool.decodeFrames(
    {
      encoding: 'hex',
      fields: [
        { name: 'value', type: 'u16', scale: 0.5 },
        { name: 'status', type: 'flags8', flags: ['leak'] },
      ],
    },
    ['0A0001', '0A00', '0B0000'],
  )
  t.same(res, [
    { ok: true, value: 5, status: ['leak'] },
    { ok: false, error: 'frame length 2 bytes does not match layout length 3' },
    { ok: true, value: 5.5, status: [] },
  ])
})

t.test('a worker crash fails that batch and the pool recovers', async (t) => {
  const pool = new DecoderPool({ workers: 2 })
  t.teardown(() => pool.destroy())
  await t.rejects(pool.crashOneWorkerForTest())
  await t.rejects(pool.crashOneWorkerForTest())
  const res = await pool.decodeTelegrams(crypto.map((v) => ({ hex: v.telegram, key: v.key })))
  t.equal(res.filter((o) => o.status === 'ok').length, 12)
  const many = await Promise.all(
    Array.from({ length: 6 }, () =>
      pool.decodeTelegrams([{ hex: crypto[1]!.telegram, key: crypto[1]!.key }]),
    ),
  )
  t.ok(many.every((r) => r[0]!.status === 'ok'))
})

t.test(
  "a plain telegram's inspection gives the fingerprint the pool's outcome carries",
  async (t) => {
    // The ingest answers repeats of plain telegrams before decoding them, by this fingerprint;
    // encrypted ones once decrypted, by the outcome's.
    const pool = new DecoderPool({ workers: 1 })
    t.teardown(() => pool.destroy())
    const vectors = [...loadVectors('visible.jsonl'), ...crypto]
    const res = await pool.decodeTelegrams(
      vectors.map((v) => ({ hex: v.telegram, key: v.key ?? v.default_key })),
    )
    let compared = 0
    vectors.forEach((v, i) => {
      const seen = inspectTelegram(v.telegram)
      const o = res[i]!
      if (!seen.ok || seen.fingerprint === null || o.status !== 'ok') return
      compared++
      t.equal(seen.fingerprint, o.fingerprint, v.source)
    })
    t.ok(compared >= 60, `${compared} plain telegrams compared`)
  },
)

t.test('inspectTelegram', async (t) => {
  let same = 0
  let n = 0
  for (const v of loadVectors('visible.jsonl')) {
    const r = inspectTelegram(v.telegram)
    n++
    if (r.ok && r.identifier === v.id) same++
  }
  t.comment(`inspect: identifier equals vector id for ${same}/${n}`)
  t.ok(same / n >= 0.85)
  for (const v of crypto) {
    const r = inspectTelegram(v.telegram)
    t.ok(r.ok && r.identifier === v.id && r.encrypted === true, v.source)
  }
  t.same(inspectTelegram('XYZ'), { ok: false, error: 'must be hexadecimal' })
  t.same(inspectTelegram('2E4'), { ok: false, error: 'must have an even number of hex digits' })
  t.same(inspectTelegram('2E44' + '00'.repeat(20)), {
    ok: false,
    error: 'frame shorter than its length field (truncated)',
  })
  t.same(inspectTelegram('0044' + '00'.repeat(20)), {
    ok: false,
    error: 'length field does not match frame length',
  })
  t.same(inspectTelegram(''), { ok: false, error: 'must be a non-empty hex string' })
  const amiplus = loadVectors('visible.jsonl').find((v) => v.driver === 'amiplus')!
  t.same(inspectTelegram(amiplus.telegram), {
    ok: true,
    identifier: amiplus.id,
    manufacturer: 'APA',
    encrypted: false,
    fingerprint: (
      decodeTelegramSync(loadWasmCore(), amiplus.telegram, null) as { fingerprint: number }
    ).fingerprint,
  })
  t.equal((inspectTelegram(crypto[0]!.telegram) as { fingerprint: null }).fingerprint, null)
})

t.test('inspection stops before the records but sees what a full begin sees', async (t) => {
  // The batch check runs the decoder's `inspect`, which skips the application records
  // (device type 0x37 aside: its identifier is in them). Its verdict, identifier,
  // manufacturer and encrypted flag must be those of a full `begin` on the same frame:
  // every vector, and frames with bytes changed (lengths, CIs, device types, records …).
  const core = loadWasmCore()
  const full = (hex: string) => {
    const len = writeHex(core, hex)
    const r = core.begin(len)
    return {
      r,
      reason: core.CTRL[S.REASON]!,
      identifier: identifierOf(core),
      manufacturer: core.CTRL[S.HAS_ID] ? manufacturer(core.CTRL[S.ID_M]!) : '',
      encrypted: r === RC.NEED_CRYPTO && core.CTRL[S.PREDEC] !== 1,
      // a frame that needs no key: the fingerprint the decoder gives once it has decoded it
      fingerprint: r === RC.OK ? fingerprintOf(core) : null,
    }
  }
  let s = 0x5eed
  const rnd = (k: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0
    return s % k
  }
  const frames: string[] = []
  const all = [...loadVectors('visible.jsonl'), ...crypto]
  for (const v of all) frames.push(...v.prior_telegrams, v.telegram)
  for (let i = 0; i < 20_000; i++) {
    const b = Buffer.from(all[rnd(all.length)]!.telegram, 'hex')
    for (let m = rnd(4); m > 0; m--) b[rnd(b.length)] = rnd(256)
    // now and then a radio converter (device type 0x37), whose identifier is in its records
    if (rnd(8) === 0 && b.length > 9) b[9] = 0x37
    frames.push(b.toString('hex'))
  }
  let bad = 0
  let ok = 0
  for (const hex of frames) {
    const got = inspectTelegram(hex)
    const want = full(hex)
    if (got.ok) ok++
    const structural = !got.ok
    const same = structural
      ? want.r === RC.INVALID
      : got.identifier === want.identifier &&
        got.manufacturer === want.manufacturer &&
        got.encrypted === want.encrypted &&
        (want.r !== RC.OK || got.fingerprint === want.fingerprint)
    if (!same && bad++ < 5) t.fail(`${hex}: ${JSON.stringify(got)} against ${JSON.stringify(want)}`)
  }
  t.equal(bad, 0, `${frames.length} frames inspected, ${ok} passed the check`)
  t.ok(ok > 5_000)
})

t.test('result buffers taken back carry later results: payloads byte for byte', async (t) => {
  const pool = new DecoderPool({ workers: 1 })
  t.teardown(() => pool.destroy())
  const core = loadWasmCore()
  const ok = plain.filter((v) => decodeTelegramSync(core, v.telegram, null).status === 'ok')
  t.ok(ok.length >= 20, `${ok.length} plain vectors`)
  const expected = (v: (typeof ok)[number]) => {
    const o = decodeTelegramSync(core, v.telegram, null)
    return o.status === 'ok' ? o.rawPayload : null
  }
  const bytesOf = (o: TelegramOutcome) => (o.status === 'ok' ? o.rawTsvBytes : null)
  const check = (outs: TelegramOutcome[], vs: typeof ok, what: string) =>
    t.same(
      outs.map((o) => (o.status === 'ok' ? o.rawPayload : null)),
      vs.map(expected),
      what,
    )

  const small = ok.slice(0, 3)
  const first = await pool.decodeTelegrams(small.map((v) => ({ hex: v.telegram, key: null })))
  check(first, small, 'first batch')
  t.equal(pool.spareBuffers, 0)
  pool.recycle(first.map(bytesOf))
  t.equal(pool.spareBuffers, 1, 'its buffer is kept, once for all its payloads')
  pool.recycle(first.map(bytesOf))
  pool.recycle([new Uint8Array(64), 'text', null])
  t.equal(pool.spareBuffers, 1, 'a buffer given back twice, or not the pool’s, is not kept')

  const second = await pool.decodeTelegrams(small.map((v) => ({ hex: v.telegram, key: null })))
  t.equal(pool.spareBuffers, 0, 'the next batch took it')
  t.equal(bytesOf(first[0]!)!.byteLength, 0, 'the first batch’s views are empty once it went')
  check(second, small, 'a batch written into a buffer used before')

  // More results than the buffer given along holds: a new one, and still right.
  pool.recycle(second.map(bytesOf))
  const many = Array.from({ length: 300 }, (_, i) => ok[i % ok.length]!)
  const third = await pool.decodeTelegrams(many.map((v) => ({ hex: v.telegram, key: null })))
  check(third, many, 'a batch larger than the buffer given along')
  pool.recycle(third.map(bytesOf))
  const fourth = await pool.decodeTelegrams(small.map((v) => ({ hex: v.telegram, key: null })))
  check(fourth, small, 'a small batch in a large buffer')
})
