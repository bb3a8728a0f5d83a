// The telegram analyzer (src/decode/analyze.ts) on the visible vectors: it answers what the
// decoder answers, names the register and why, or the layer that failed; the admin route
// POST /admin/v1/decode and the CLI `meterflow decode` give the same analysis.
import t from 'tap'
import { existsSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { formatAnalysis } from '../../src/decode/analysis-text.js'
import { analyzeTelegram } from '../../src/decode/analyze.js'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { startTestServer } from '../helpers/server.js'
import { loadVectors } from './vectors.js'

const LAYERS = new Set([
  'input',
  'key',
  'frame',
  'ell',
  'afl',
  'tpl',
  'security',
  'compact',
  'records',
  'register',
])

t.test(
  'every visible and crypto vector: the decoder outcome, with layers and records',
  async (t) => {
    const core = loadWasmCore()
    const vs = [...loadVectors('visible.jsonl'), ...loadVectors('crypto-visible.jsonl')].filter(
      (v) => v.prior_telegrams.length === 0,
    )
    let ok = 0
    for (const v of vs) {
      const key = v.key ?? v.default_key
      const a = analyzeTelegram(v.telegram, key)
      const o = decodeTelegramSync(core, v.telegram, key)
      t.equal(a.status, o.status, `${v.source} status`)
      if (o.status === 'ok' && a.status === 'ok') {
        ok++
        t.equal(a.identifier, o.identifier)
        t.equal(a.value, o.value)
        t.equal(a.records.filter((r) => r.selected).length, 1, 'one record selected')
        t.match(a.register?.why, /storage 0|manufacturer format/)
        t.ok(
          a.layers.some((l) => l.layer === 'tpl'),
          'tpl layer shown',
        )
      } else if (o.status !== 'ok') {
        t.equal(a.reason, o.reason)
        t.ok(LAYERS.has(a.failed!.layer), `${v.source}: failed at ${a.failed!.layer}`)
      }
    }
    t.ok(ok > 150, `${ok} analyses ok`)
  },
)

t.test('failures name their layer', async (t) => {
  const c = loadVectors('crypto-visible.jsonl')
  const mode5 = c.find((v) => v.scheme === 'mode5' && v.expect === 'ok')!
  const wrong = c.find((v) => v.expect === 'wrong_key')!
  const cases: [string, string | null, string, RegExp][] = [
    ['12G4', null, 'input', /hexadecimal/],
    ['2E44' + '00'.repeat(20), null, 'frame', /shorter than its length field/],
    [mode5.telegram, null, 'security', /no key/],
    [wrong.telegram, wrong.key, 'security', /wrong key/],
    [mode5.telegram, 'zz', 'key', /32 hex digits/],
    // compact frame of an unknown format
    [
      '1244' + '2D2C' + '78563412' + '1B16' + '79' + 'AAAA0000' + '01020304',
      null,
      'compact',
      /compact frame/,
    ],
    // a plain frame with only a date record: no register
    [
      '0E44' + '2D2C' + '78563412' + '1B16' + '78' + '426C' + '1F3C',
      null,
      'register',
      /no current register/,
    ],
  ]
  for (const [hex, key, layer, reason] of cases) {
    const a = analyzeTelegram(hex, key)
    t.not(a.status, 'ok', hex)
    t.equal(a.failed?.layer, layer, `${hex.slice(0, 20)}: ${layer}`)
    t.match(a.reason, reason)
  }
  const ok = analyzeTelegram(mode5.telegram, mode5.key)
  const steps = ok.security.steps as Record<string, unknown>[]
  t.equal(steps[0]!.result, 'decrypted and verified')
  t.equal(steps[0]!.verified_by, '2F2F after decryption')
  t.match(formatAnalysis(ok), /<= register/)
})

t.test('POST /admin/v1/decode', async (t) => {
  const srv = await startTestServer()
  t.teardown(() => srv.close())
  const v = loadVectors('crypto-visible.jsonl').find(
    (x) => x.scheme === 'mode7' && x.expect === 'ok',
  )!
  const call = (body: unknown) =>
    srv.call('POST', '/admin/v1/decode', { token: srv.adminToken, body })
  let r = await call({ telegram: v.telegram, key: v.key })
  t.equal(r.status, 200)
  t.same(r.body.data, analyzeTelegram(v.telegram, v.key))
  t.equal(r.body.data.status, 'ok')
  r = await call({ telegram: v.telegram })
  t.equal(r.body.data.status, 'rejected_unconfigured')
  t.equal(r.body.data.failed.layer, 'security')
  r = await call({ telegram: 'not hex' })
  t.equal(r.status, 422)
  t.ok(r.body.errors.telegram)
  r = await call({ telegram: v.telegram, key: '123' })
  t.equal(r.status, 422)
  t.ok(r.body.errors.key)
  r = await srv.call('POST', '/admin/v1/decode', { body: { telegram: v.telegram } })
  t.equal(r.status, 401)
})

t.test('meterflow decode (CLI, runs dist/)', async (t) => {
  const bin = new URL('../../bin/meterflow.js', import.meta.url)
  if (!existsSync(new URL('../../dist/decode/analyze.js', import.meta.url))) {
    t.comment('SKIP: dist/decode/analyze.js missing (npm run build:ts)')
    return
  }
  const v = loadVectors('visible.jsonl').find((x) => x.driver === 'amiplus' && x.register)!
  const run = promisify(execFile)
  const { stdout } = await run(process.execPath, [bin.pathname, 'decode', v.telegram, '--json'])
  t.same(JSON.parse(stdout), analyzeTelegram(v.telegram, null))
  const text = (await run(process.execPath, [bin.pathname, 'decode', v.telegram])).stdout
  t.match(text, /^ok: meter /)
  t.match(text, /register: record/)
  const bad = await run(process.execPath, [bin.pathname, 'decode', '12G4']).catch((e) => e)
  t.equal(bad.code, 1)
  t.match(bad.stderr, /hex digits/)
})
