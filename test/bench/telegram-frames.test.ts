// The telegram gateway bench's frames (bench/lib/telegram-frames.ts): every fixture of the
// bench varies, each meter decodes to its own identity, its telegrams' access number and
// register move on, no two of them are alike (the repeat check would drop them), and the
// batched AES-CBC gives what a cipher per telegram gives. First contact bodies name no meter
// and never repeat an identity, unless every lane is to hear the same new meters.
import { createCipheriv } from 'node:crypto'
import fs from 'node:fs'
import t from 'tap'
import {
  bodyFactory,
  telegramGatewayId,
  telegramGatewayMeter,
  telegramIndex,
} from '../../bench/lib/bodies.js'
import { FleetFrames, frameShapes, type FixtureFrame } from '../../bench/lib/telegram-frames.js'
import { loadWasmCore } from '../../src/decode/core.js'
import { RC, S } from '../../src/decode/layout.js'
import { parseKey, runTelegram, writeHex } from '../../src/decode/telegram.js'
import { selectedValue } from '../../src/decode/register-value.js'
import { fingerprintOf, identifierOf } from '../../src/decode/telegram-identity.js'

const fixtures = JSON.parse(
  fs.readFileSync(new URL('../../bench/fixtures/telegrams.json', import.meta.url), 'utf8'),
) as Record<string, FixtureFrame[]>
const core = loadWasmCore()

function decode(hex: string, key: string | null) {
  writeHex(core, hex)
  const rc = runTelegram(core, hex.length, parseKey(key) as Uint8Array | null)
  return {
    rc,
    id: identifierOf(core),
    acc: core.CTRL[S.ACC]!,
    value: selectedValue(core).value,
    fingerprint: fingerprintOf(core),
  }
}

for (const kind of ['plain', 'mode5']) {
  t.test(`${kind}: every fixture varies and decodes as its meter's k-th telegram`, async (t) => {
    const fx = fixtures[kind]!
    const { shapes, leftOut } = frameShapes(fx)
    // bfw240radio's register is read big-endian by its driver: k + 1 would not rise past 255.
    t.same(
      leftOut.map((why) => why.split(':')[0]),
      kind === 'plain' ? ['drivers/src/bfw240radio.xmq#1'] : [],
      'only a register that cannot rise left out',
    )
    t.equal(shapes.length + leftOut.length, fx.length)
    const ids = Array.from({ length: 2 * fx.length }, (_, m) => 93_000_000 + m)
    const frames = new FleetFrames(shapes, ids)
    const meters = ids.map((_, m) => m)
    const seen = new Set<string>()
    let bad = 0
    const before = meters.map(() => ({ acc: -1, value: -Infinity }))
    for (const k of [10, 11, 12, 266]) {
      frames.request(meters, k).forEach((hex, m) => {
        const d = decode(hex, shapes[m % shapes.length]!.key)
        const last = before[m]!
        if (
          d.rc !== RC.OK ||
          d.id !== String(ids[m]) ||
          (shapes[m % shapes.length]!.accOffsets.length > 0 && d.acc !== k % 256) ||
          !(d.value > last.value)
        )
          bad++
        before[m] = { acc: d.acc, value: d.value }
        seen.add(`${m}:${d.fingerprint}`)
      })
    }
    t.equal(bad, 0, 'each decodes with its identity, access number k mod 256 and a rising value')
    t.equal(
      seen.size,
      4 * meters.length,
      'no two telegrams of a meter alike (266 ≡ 10 mod 256 too)',
    )
  })
}

t.test('mode 5: the batched AES-CBC is a cipher per telegram', async (t) => {
  const { shapes } = frameShapes(fixtures.mode5!)
  const ids = Array.from({ length: 3 * shapes.length }, (_, m) => 94_000_000 + m)
  const frames = new FleetFrames(shapes, ids).request(
    ids.map((_, m) => m),
    42,
  )
  const plain = new FleetFrames(
    shapes.map((s) => ({ ...s, cipher: null })),
    ids,
  ).request(
    ids.map((_, m) => m),
    42,
  )
  let same = 0
  frames.forEach((hex, m) => {
    const s = shapes[m % shapes.length]!
    const c = s.cipher!
    const p = Buffer.from(plain[m]!, 'hex')
    const iv = Buffer.from([...c.ivHead.map((o) => p[o]!), ...Array(8).fill(p[s.accOffsets[0]!])])
    const e = createCipheriv('aes-128-cbc', Buffer.from(s.key!, 'hex'), iv).setAutoPadding(false)
    const sealed = Buffer.concat([e.update(p.subarray(c.off, c.off + c.len)), e.final()])
    p.set(sealed, c.off)
    if (p.toString('hex') === hex) same++
  })
  t.equal(same, frames.length, 'byte for byte')
})

/** `telegramGateway` bodies of the plain fixtures from 2026-01-01, a minute a request. */
const start = Date.UTC(2026, 0, 1)
const plainGateway = (batch: number, hearers?: number) =>
  bodyFactory({
    kind: 'telegramGateway',
    batch,
    shapes: frameShapes(fixtures.plain!).shapes,
    suffix: 'plain',
    idDigit: 1,
    ...(hearers ? { hearers } : {}),
    startMs: start,
    stepMs: 60_000,
  })

t.test(
  'gateway bodies: a meter per item, its own identity, its telegram by the time',
  async (t) => {
    const { shapes } = frameShapes(fixtures.plain!)
    const f = plainGateway(6)
    const items = (
      JSON.parse(f.make(2, 5)) as {
        readings: { meter: string; payload: { telegram: string }; recorded_at: string }[]
      }
    ).readings
    t.same(
      items.map((i) => i.meter),
      Array.from({ length: 6 }, (_, i) => telegramGatewayMeter(2, i, 'plain')),
    )
    t.ok(items.every((i) => i.recorded_at === new Date(start + 5 * 60_000).toISOString()))
    const k = telegramIndex(start + 5 * 60_000)
    items.forEach((item, i) => {
      const d = decode(item.payload.telegram, null)
      t.equal(d.id, String(telegramGatewayId(2, i, 1)), `${item.meter}: its identity`)
      if (shapes[i]!.accOffsets.length) t.equal(d.acc, k % 256, `${item.meter}: access number`)
    })
  },
)

t.test('heard by two gateways: two lanes send one group its telegrams, 1 ms apart', async (t) => {
  const f = plainGateway(4, 2)
  type Item = { meter: string; payload: { telegram: string }; recorded_at: string }
  const [a, b, c] = [2, 3, 4].map(
    (lane) => (JSON.parse(f.make(lane, 7)) as { readings: Item[] }).readings,
  )
  t.same(
    a!.map((i) => i.meter),
    Array.from({ length: 4 }, (_, i) => telegramGatewayMeter(1, i, 'plain')),
    'lanes 2 and 3 are group 1',
  )
  t.same(
    b!.map((i) => [i.meter, i.payload.telegram]),
    a!.map((i) => [i.meter, i.payload.telegram]),
    'the same meters and telegrams',
  )
  t.equal(Date.parse(b![0]!.recorded_at) - Date.parse(a![0]!.recorded_at), 1, '1 ms apart')
  t.same(
    c!.map((i) => i.meter),
    Array.from({ length: 4 }, (_, i) => telegramGatewayMeter(2, i, 'plain')),
    'lane 4 is group 2',
  )
})

/** `telegramNew` bodies (first contact) of the plain fixtures, 8 lanes. */
const firstContact = (batch: number, shared: boolean) =>
  bodyFactory({
    kind: 'telegramNew',
    batch,
    shapes: frameShapes(fixtures.plain!).shapes,
    shared,
    lanes: 8,
    idBase: 10_000_000,
    atMs: start,
  })

type NewItem = { meter?: string; payload: { telegram: string }; recorded_at: string }
const newItems = (f: ReturnType<typeof firstContact>, lane: number, seq: number) =>
  (JSON.parse(f.make(lane, seq)) as { readings: NewItem[] }).readings

t.test('first contact: telegrams alone, of meters no request named before', async (t) => {
  const f = firstContact(5, false)
  const seen = new Set<string>()
  for (let seq = 0; seq < 3; seq++)
    for (let lane = 0; lane < 8; lane++) {
      const items = newItems(f, lane, seq)
      t.ok(
        items.every((i) => i.meter === undefined),
        'no meter field: the link layer names it',
      )
      t.ok(items.every((i) => i.recorded_at === new Date(start).toISOString()))
      items.forEach((item, i) => {
        const d = decode(item.payload.telegram, null)
        t.equal(d.rc, RC.OK, 'decodes')
        t.equal(
          d.id,
          String(10_000_000 + (seq * 8 + lane) * 5 + i),
          'identity of request r, item i',
        )
        seen.add(d.id)
      })
    }
  t.equal(seen.size, 3 * 8 * 5, 'every identity once')
})

t.test('first contact heard by all 8: the same telegrams, receive times 1 ms apart', async (t) => {
  const f = firstContact(4, true)
  const lanes = [0, 1, 7].map((lane) => newItems(f, lane, 2))
  for (const items of lanes.slice(1))
    t.same(
      items.map((i) => i.payload.telegram),
      lanes[0]!.map((i) => i.payload.telegram),
      'the same telegrams',
    )
  t.same(
    lanes.map((items) => Date.parse(items[0]!.recorded_at) - start),
    [0, 1, 7],
    'lane ms after the time',
  )
  t.equal(
    decode(lanes[0]![0]!.payload.telegram, null).id,
    String(10_000_000 + 2 * 4),
    'request seq',
  )
  t.not(
    decode(newItems(f, 0, 3)[0]!.payload.telegram, null).id,
    decode(lanes[0]![0]!.payload.telegram, null).id,
    'the next request: new meters',
  )
})
