// Mapping presets: every preset maps its documented sample message (unit level), the
// helpers read what the field sends, and a webhook endpoint created with `{preset}` stores
// the sample through the real pipeline (both store modes), retries answered as duplicates.
import t from 'tap'
import {
  base64ToHex,
  isoTime,
  isWmbusTelegram,
  wmbusmetersTotal,
} from '../../src/webhooks/mapping-helpers.js'
import { findPreset, MAPPING_PRESETS } from '../../src/presets/presets.js'
import { compileMapping, mapFields, mapItems, missingField } from '../../src/webhooks/mapping.js'
import { fullFrame } from '../helpers/wmbus.js'
import { startTestServer } from '../helpers/server.js'

async function mapAll(presetName: string, body: unknown) {
  const m = compileMapping(findPreset(presetName)!.mapping)
  const items = await mapItems(m, body)
  const out = []
  for (const it of items) out.push(await mapFields(m, it, body))
  return out
}

const TELEGRAM = findPreset('wmbus-raw-telegram')!.sample as { telegram: string }
const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64')

t.test('helpers', async (t) => {
  t.equal(base64ToHex('AQIDBA=='), '01020304')
  t.equal(base64ToHex('AQIDBA'), '01020304', 'unpadded base64')
  t.equal(base64ToHex('not base64!'), undefined)
  t.equal(base64ToHex(42), undefined)
  t.ok(isWmbusTelegram(TELEGRAM.telegram))
  t.notOk(isWmbusTelegram('01020304'))
  t.same(wmbusmetersTotal({ total_m3: 1.5, total_kwh: 2 }), { value: 1.5, unit: 'm3' })
  t.same(wmbusmetersTotal({ total_heat_kwh: 7 }), { value: 7, unit: 'kwh' })
  t.equal(wmbusmetersTotal({ current_status: 'OK' }), undefined)
  t.equal(isoTime('2025-02-28 10:00.05'), '2025-02-28T10:00:05Z', 'wmbusmeters local format')
  t.equal(isoTime('2025-02-28T10:00:00.123456+00:00'), '2025-02-28T10:00:00.123456+00:00')
  t.equal(isoTime('yesterday'), undefined)
})

t.test('every preset maps its sample to complete items', async (t) => {
  for (const p of MAPPING_PRESETS) {
    const items = await mapAll(p.name, p.sample)
    t.equal(items.length, 1, `${p.name}: one item`)
    t.equal(missingField(items[0]!), null, `${p.name}: nothing missing`)
  }
  const [cs] = await mapAll('chirpstack-v4', findPreset('chirpstack-v4')!.sample)
  t.same(cs, {
    meter: '0101010101010101',
    kind: 'saldo',
    value: 123.456,
    unit: 'm3',
    recorded_at: '2025-02-28T10:00:00.123456+00:00',
  })
  const [tts] = await mapAll('the-things-stack-v3', findPreset('the-things-stack-v3')!.sample)
  t.same(tts, {
    meter: '70B3D57ED0000001',
    kind: 'saldo',
    value: 45.5,
    unit: 'kwh',
    recorded_at: '2025-02-28T10:00:00.400000000Z',
  })
  const [wm] = await mapAll('wmbusmeters-json', findPreset('wmbusmeters-json')!.sample)
  t.same(wm, {
    meter: '76348799',
    kind: 'saldo',
    value: 6.408,
    unit: 'm3',
    recorded_at: '2025-02-28T10:00:00Z',
  })
  const [raw] = await mapAll('wmbus-raw-telegram', TELEGRAM)
  t.same(raw, {
    profile: 'wmbus_oms',
    payload: { telegram: TELEGRAM.telegram },
    recorded_at: '2025-02-28T10:00:00Z',
  })
})

t.test('LoRaWAN payloads carrying a wM-Bus telegram go to wmbus_oms', async (t) => {
  const frame = fullFrame(12345678, 1000).toUpperCase()
  const cs = { ...(findPreset('chirpstack-v4')!.sample as object), data: b64(frame) }
  t.same(await mapAll('chirpstack-v4', cs), [
    {
      profile: 'wmbus_oms',
      payload: { telegram: frame },
      recorded_at: '2025-02-28T10:00:00.123456+00:00',
    },
  ])
  const s = findPreset('the-things-stack-v3')!.sample as any
  const tts = { ...s, uplink_message: { ...s.uplink_message, frm_payload: b64(frame) } }
  const [m] = await mapAll('the-things-stack-v3', tts)
  t.equal(m!.profile, 'wmbus_oms')
  t.same(m!.payload, { telegram: frame })
})

t.test('preset edge cases', async (t) => {
  const cs = findPreset('chirpstack-v4')!.sample as any
  t.same(
    await mapAll('chirpstack-v4', { ...cs, data: undefined, object: undefined }),
    [],
    'join/status events: no items',
  )
  const multi = await mapAll('chirpstack-v4', {
    ...cs,
    object: {
      readings: [
        { meter: 'ch1', kind: 'saldo', value: 1, unit: 'kwh' },
        { meter: 'ch2', kind: 'saldo', value: 2, unit: 'kwh', recorded_at: '2025-02-28T09:00:00Z' },
      ],
    },
  })
  t.same(
    multi.map((m) => [m.meter, m.recorded_at]),
    [
      ['ch1', '2025-02-28T10:00:00.123456+00:00'],
      ['ch2', '2025-02-28T09:00:00Z'],
    ],
  )
  const [noObject] = await mapAll('chirpstack-v4', { ...cs, object: undefined })
  t.equal(missingField(noObject!)?.field, 'kind', 'no codec output and no telegram: unmappable')
  const [alarm] = await mapAll('wmbusmeters-json', {
    id: '1',
    timestamp: '2025-02-28T10:00:00Z',
    current_status: 'LEAK',
  })
  t.equal(missingField(alarm!)?.field, 'kind', 'wmbusmeters message without a register')
  const [rtl] = await mapAll(
    'wmbus-raw-telegram',
    `T1;1;1;2025-02-28 10:00:00.000;97;148;33221100;0x${TELEGRAM.telegram}`,
  )
  t.same(rtl, {
    profile: 'wmbus_oms',
    payload: { telegram: TELEGRAM.telegram },
    recorded_at: '2025-02-28T10:00:00.000Z',
  })
  const [bare] = await mapAll('wmbus-raw-telegram', TELEGRAM.telegram)
  t.equal(missingField(bare!)?.field, 'recorded_at', 'bare hex without a time is unmappable')
})

t.test('webhook endpoints take a preset by name and store each sample', async (t) => {
  const srv = await startTestServer()
  t.teardown(() => srv.close())
  const { workspaceId: ws, token } = await srv.tenant()

  const bad = await srv.call('POST', `/admin/v1/workspaces/${ws}/webhook-endpoints`, {
    token: srv.adminToken,
    body: { preset: 'nope' },
  })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors.preset, 'unknown preset named')
  const both = await srv.call('POST', `/admin/v1/workspaces/${ws}/webhook-endpoints`, {
    token: srv.adminToken,
    body: { preset: 'chirpstack-v4', mapping: { fields: { recorded_at: 't' } } },
  })
  t.equal(both.status, 422)

  const expectMeter: Record<string, string> = {
    'chirpstack-v4': '0101010101010101',
    'the-things-stack-v3': '70B3D57ED0000001',
    'wmbusmeters-json': '76348799',
    'wmbus-raw-telegram': '33221100',
  }
  for (const p of MAPPING_PRESETS) {
    const ep = (await srv.admin('POST', `/workspaces/${ws}/webhook-endpoints`, { preset: p.name }))
      .data
    t.same(ep.mapping, p.mapping, `${p.name}: the preset's mapping is stored`)
    const send = () =>
      srv.call('POST', ep.path, { headers: { 'x-webhook-token': ep.token }, body: p.sample })
    const r1 = await send()
    t.equal(r1.status, 200, `${p.name}: ${r1.text}`)
    t.equal(r1.body.results[0].status, 'created', `${p.name}: created`)
    t.equal(r1.body.results[0].meter, expectMeter[p.name])
    const r2 = await send()
    t.equal(r2.body.results[0].status, 'duplicate', `${p.name}: a retry is a duplicate`)
  }
  const meters = await srv.call('GET', '/api/v1/meters', { token })
  t.same(
    meters.body.data.map((m: any) => m.meter_identifier).sort(),
    Object.values(expectMeter).sort(),
  )
  const wmbus = meters.body.data.find((m: any) => m.meter_identifier === '33221100')
  t.equal(wmbus.profile.key, 'wmbus_oms')
})

t.test('GET /admin/v1/mapping-presets lists every preset with its sample', async (t) => {
  const srv = await startTestServer()
  t.teardown(() => srv.close())
  const r = await srv.admin('GET', '/mapping-presets')
  t.same(
    r.data.map((p: any) => p.name),
    MAPPING_PRESETS.map((p) => p.name),
  )
  t.ok(r.data.every((p: any) => p.sample && p.mapping.fields.recorded_at))
})

t.test('docs/presets.md shows each preset with the sample and mapping the code has', async (t) => {
  const doc = (await import('node:fs')).readFileSync(
    new URL('../../docs/presets.md', import.meta.url),
    'utf8',
  )
  for (const p of MAPPING_PRESETS) {
    const section = doc.slice(doc.indexOf(`## \`${p.name}\``))
    const blocks = [...section.matchAll(/```json\n([\s\S]*?)```/g)].slice(0, 2)
    t.same(JSON.parse(blocks[0]![1]!), p.sample, `${p.name}: sample`)
    t.same(JSON.parse(blocks[1]![1]!), p.mapping, `${p.name}: mapping`)
  }
})
