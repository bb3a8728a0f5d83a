// Conformance against the wmbusmeters-derived vectors and the synthetic crypto vectors.
import t from 'tap'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { loadVectors, expectedCanonical, close } from './vectors.js'

// Ratchet: raise when the decoder gets better, never lower.
const RATCHET = 0.99

const core = loadWasmCore()

t.test('visible.jsonl: link-layer id and register value', async (t) => {
  let ok = 0
  let n = 0
  const failures: string[] = []
  for (const v of loadVectors('visible.jsonl')) {
    if (!v.register) continue
    n++
    const key = v.key ?? v.default_key
    for (const p of v.prior_telegrams) decodeTelegramSync(core, p, key)
    const o = decodeTelegramSync(core, v.telegram, key)
    const exp = expectedCanonical(v.register)
    if (
      o.status === 'ok' &&
      o.identifier === v.id &&
      o.unit === exp.unit &&
      close(o.value, exp.value)
    )
      ok++
    else
      failures.push(
        `${v.source} ${v.driver}: ${o.status === 'ok' ? `${o.identifier} ${o.value} ${o.unit}` : o.reason}`,
      )
  }
  const ratio = ok / n
  t.comment(`conformance: ${ok}/${n} = ${(ratio * 100).toFixed(1)} %`)
  if (process.env.DECODE_VERBOSE) for (const f of failures) t.comment(f)
  t.ok(ratio >= RATCHET, `ratio ${ratio.toFixed(3)} >= ratchet ${RATCHET}`)
})

t.test('crypto-visible.jsonl: every vector', async (t) => {
  const vs = loadVectors('crypto-visible.jsonl')
  t.equal(vs.length, 15)
  for (const v of vs) {
    const o = decodeTelegramSync(core, v.telegram, v.key)
    if (v.expect === 'ok') {
      const exp = expectedCanonical(v.register!)
      t.equal(o.status, 'ok', `${v.source} ${v.scheme} decodes`)
      if (o.status === 'ok') {
        t.equal(o.identifier, v.id, `${v.source} id`)
        t.ok(close(o.value, exp.value), `${v.source} value ${o.value} ~ ${exp.value}`)
        t.equal(o.unit, exp.unit)
      }
      // without a key it is not configured
      t.equal(
        decodeTelegramSync(core, v.telegram, null).status,
        'rejected_unconfigured',
        `${v.source} no key`,
      )
    } else {
      t.equal(o.status, 'rejected_undecodable', `${v.source} ${v.scheme} wrong key refused`)
      if (o.status === 'rejected_undecodable') t.match(o.reason, /wrong key/)
    }
  }
})

t.test('predecrypted frames decode without a key', async (t) => {
  let n = 0
  for (const v of loadVectors('visible.jsonl')) {
    if (!v.register || !v.link.predecrypted || v.link.ci?.toString().includes('79')) continue
    const o = decodeTelegramSync(core, v.telegram, null)
    if (o.status === 'ok') n++
  }
  t.ok(n >= 20, `${n} predecrypted vectors accepted without key`)
})

t.test('outcomes: invalid, statuses and records', async (t) => {
  t.same(decodeTelegramSync(core, 'ZZ', null), { status: 'invalid', reason: 'must be hexadecimal' })
  t.equal(decodeTelegramSync(core, '2E44', null).status, 'invalid')
  const v = loadVectors('visible.jsonl').find((x) => x.driver === 'amiplus' && x.register)!
  // wrong length field
  t.same(decodeTelegramSync(core, '00' + v.telegram.slice(2), null), {
    status: 'invalid',
    reason: 'length field does not match frame length',
  })
  const ok = decodeTelegramSync(core, v.telegram, null)
  t.equal(ok.status, 'ok')
  if (ok.status === 'ok') {
    const r = ok.records as { link: Record<string, unknown>; records: Record<string, unknown>[] }
    t.equal(r.link.id, v.id)
    t.ok(r.records.some((x) => x.selected === true))
  }
  // status byte: set power low (bit 2) and permanent error (bit 3) in a plain short-TPL telegram
  const plain = loadVectors('visible.jsonl').find(
    (x) =>
      x.register &&
      x.link.tpl_ci === '7A' &&
      x.link.tpl_sec_mode === 0 &&
      x.link.frame === 'wmbus' &&
      x.link.dll_crc === null,
  )!
  const st = 10 + 2 // CI at 10, ACC at 11, ST at 12
  const hex = plain.telegram.slice(0, st * 2) + '0C' + plain.telegram.slice(st * 2 + 2)
  const o = decodeTelegramSync(core, hex, null)
  t.equal(o.status, 'ok')
  if (o.status === 'ok') {
    t.same(o.rawFlags, ['power_low', 'permanent_error'])
    t.same(o.statuses.sort(), ['error', 'low_battery'])
  }
  // mode 5 without key
  const enc = loadVectors('crypto-visible.jsonl')[0]!
  t.same(decodeTelegramSync(core, enc.telegram, null), {
    status: 'rejected_unconfigured',
    reason: 'encrypted telegram and no key configured',
  })
})
