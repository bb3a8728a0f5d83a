// Vectors built here from public descriptions (test/fixtures/wmbus/own-vectors.py writes
// own-vectors.jsonl): well-known compact formats without a full frame, L-field cases,
// combinable VIFEs and energy units. Each vector decodes on a fresh decoder.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { close } from './vectors.js'

interface OwnVector {
  name: string
  telegram: string
  key: string | null
  expect: { status: string; id?: string; value?: number; unit?: string | null; reason?: string }
  built: string
}

const vectors = readFileSync(
  new URL('../fixtures/wmbus/own-vectors.jsonl', import.meta.url),
  'utf8',
)
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as OwnVector)

t.test('own vectors', async (t) => {
  t.ok(vectors.length >= 20)
  for (const v of vectors) {
    const o = decodeTelegramSync(loadWasmCore(), v.telegram, v.key)
    t.equal(o.status, v.expect.status, `${v.name}: status`)
    if (o.status === 'ok' && v.expect.status === 'ok') {
      t.equal(o.identifier, v.expect.id, `${v.name}: id`)
      t.equal(o.unit, v.expect.unit, `${v.name}: unit`)
      t.ok(close(o.value, v.expect.value!), `${v.name}: ${o.value} ~ ${v.expect.value}`)
    } else if (o.status !== 'ok' && v.expect.reason) {
      t.match(o.reason, new RegExp(v.expect.reason), `${v.name}: reason`)
    }
  }
})
