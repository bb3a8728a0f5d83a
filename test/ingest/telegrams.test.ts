// wmbus_oms and binary-frame profiles through POST /reportData, every outcome end to end.
import fs from 'node:fs'
import t from 'tap'
import { startTestServer } from '../helpers/server.js'
import { statusCurrent } from '../../src/store/rollup-feed.js'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { compactFrame, fullFrame } from '../helpers/wmbus.js'
import { decodeChannel, type DecodeEvent } from '../../src/decode/channel.js'

const load = (f: string) =>
  fs
    .readFileSync(new URL(`../fixtures/wmbus/${f}`, import.meta.url), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
const visible = load('visible.jsonl')
const crypto = load('crypto-visible.jsonl')
const plain = visible.find((v: any) => v.source === 'drivers/src/abbb23.xmq#1')
const mode5 = crypto.find((v: any) => v.scheme === 'mode5' && v.expect === 'ok')
const wrong = crypto.find((v: any) => v.expect === 'wrong_key')
const ell = crypto.find((v: any) => v.scheme === 'ell_ctr' && v.expect === 'ok')

const s = await startTestServer({ WORKERS: '1' })
t.teardown(() => s.close())
const { token, workspaceId } = await s.tenant()
const base = Date.now() - 3600_000
const at = (min: number) => new Date(base + min * 60_000).toISOString()
const report = (readings: unknown[]) =>
  s.call('POST', '/api/v1/reportData', { token, body: { readings } })
const tg = (telegram: string, min: number, extra: Record<string, unknown> = {}) => ({
  profile: 'wmbus_oms',
  payload: { telegram },
  recorded_at: at(min),
  ...extra,
})

t.test(
  'a plain telegram: identifier from the link layer, register stored as saldo in kWh',
  async (t) => {
    const r = await report([tg(plain.telegram, 0)])
    t.equal(r.status, 201, r.text)
    t.same(r.body.results[0], {
      meter: '33221100',
      kind: 'saldo',
      recorded_at: at(0),
      status: 'created',
    })
    const m = (await s.app.parts.meters.byIdentifier(workspaceId, '33221100'))!
    t.equal(m.profile_key, 'wmbus_oms')
    const [row] = await s.app.parts.store.sql.query<any>(
      `SELECT kind, canonical_value, canonical_unit, raw_payload FROM readings FINAL WHERE meter_id = ${m.id}`,
    )
    t.equal(row.kind, 'saldo')
    t.equal(row.canonical_unit, 'kwh')
    t.ok(Math.abs(row.canonical_value - 5249.17) < 1e-6, String(row.canonical_value))
    t.equal(JSON.parse(row.raw_payload).telegram, plain.telegram, 'raw telegram kept')
    // sent to the store as a string literal (decode/wire.ts), stored as the decoder's text
    const decoded = decodeTelegramSync(loadWasmCore(), plain.telegram, null)
    t.equal(decoded.status, 'ok')
    if (decoded.status === 'ok')
      t.equal(row.raw_payload, decoded.rawPayload, 'stored byte for byte')
    const again = await report([tg(plain.telegram, 0)])
    t.equal(again.body.results[0].status, 'duplicate')
  },
)

t.test('a supplied meter wins over the link-layer identifier', async (t) => {
  const r = await report([tg(plain.telegram, 1, { meter: 'my-own-name' })])
  t.equal(r.body.results[0].meter, 'my-own-name')
  t.equal(r.body.results[0].status, 'created')
})

t.test(
  'encrypted without a key: rejected_unconfigured, meter provisioned; with the key: stored',
  async (t) => {
    const r = await report([tg(mode5.telegram, 0)])
    t.equal(r.status, 200)
    t.equal(r.body.results[0].status, 'rejected_unconfigured')
    t.type(r.body.results[0].reason, 'string')
    const m = (await s.app.parts.meters.byIdentifier(workspaceId, mode5.id))!
    t.ok(m, 'meter provisioned so it can be configured')
    const set = await s.admin('PUT', `/meters/${m.id}/wmbus-key`, { key: mode5.key })
    t.match(set.data, { meter_id: m.id, has_key: true })
    t.notMatch(JSON.stringify(set), mode5.key, 'the key is never returned')
    // the key PUT replayed the quarantined telegram (docs/decoders.md "Key diagnostics")
    t.match(set.data.replay, { status: 'completed', replayed: 1 })
    const ok = await report([tg(mode5.telegram, 0)])
    t.equal(ok.body.results[0].status, 'duplicate', ok.text)
    const [row] = await s.app.parts.store.sql.query<any>(
      `SELECT canonical_value FROM readings FINAL WHERE meter_id = ${m.id}`,
    )
    t.ok(Math.abs(row.canonical_value - mode5.register.value) < 1e-6)
  },
)

t.test('ELL AES-CTR with its key is stored', async (t) => {
  await report([tg(ell.telegram, 0)])
  const m = (await s.app.parts.meters.byIdentifier(workspaceId, ell.id))!
  const set = await s.admin('PUT', `/meters/${m.id}/wmbus-key`, { key: ell.key })
  // the key PUT replayed the quarantined telegram through ingest and stored it
  const job = await s.admin('GET', `/imports/${set.data.replay.import_id}`)
  t.match(job.data, { status: 'completed', accepted: 1, rejected: 0 })
  const r = await report([tg(ell.telegram, 0)])
  t.equal(r.body.results[0].status, 'duplicate', r.text)
})

t.test('an encrypted telegram heard again is a repeat once decrypted', async (t) => {
  // The ELL meter has its key now (test above). Its inspection gives no fingerprint (the
  // bytes are ciphertext): the repeat check runs on the decoder's, after decryption.
  const again = await report([
    { ...tg(ell.telegram, 0), recorded_at: new Date(Date.parse(at(0)) + 20_000).toISOString() },
  ])
  t.equal(again.body.results[0].status, 'duplicate', again.text)
  t.match(again.body.results[0].reason, /repeat of the same telegram/)
})

t.test('a wrong key: rejected_undecodable with a reason', async (t) => {
  await report([tg(wrong.telegram, 0)])
  const m = (await s.app.parts.meters.byIdentifier(workspaceId, wrong.id))!
  await s.admin('PUT', `/meters/${m.id}/wmbus-key`, { key: '00112233445566778899AABBCCDDEEFF' })
  const r = await report([tg(wrong.telegram, 0)])
  t.equal(r.body.results[0].status, 'rejected_undecodable')
  t.match(r.body.results[0].reason, /key/i)
})

t.test(
  'an 8-byte (DES) key is accepted; a DES telegram: unsupported security mode 3',
  async (t) => {
    // TPL 7A, configuration field 0310 (security mode 3, DES-CBC), one encrypted block
    const des = '1E4493150100007701077A2A0010038A1F2E3D4C5B6A798897A6B5C4D3E2F1'
    await report([tg(des, 0)])
    const m = (await s.app.parts.meters.byIdentifier(workspaceId, '77000001'))!
    t.ok(m, 'meter provisioned')
    const set = await s.admin('PUT', `/meters/${m.id}/wmbus-key`, { key: '0011223344556677' })
    t.match(set.data, { meter_id: m.id, has_key: true })
    const r = await report([tg(des, 1)])
    t.equal(r.body.results[0].status, 'rejected_undecodable')
    t.equal(r.body.results[0].reason, 'unsupported security mode 3')
  },
)

t.test('binary frame profile: decoded into {value, status}, hex and base64', async (t) => {
  const layout = (encoding: string) => ({
    encoding,
    fields: [
      { name: 'value', type: 'u32', endian: 'be', scale: 0.01 },
      { name: 'status', type: 'flags8', flags: ['LEAK', 'BAT'] },
    ],
  })
  await s.admin('POST', `/workspaces/${workspaceId}/profiles`, {
    key: 'binhex',
    name: 'Hex',
    kind: 'saldo',
    unit: 'm3',
    decoder: layout('hex'),
    status_map: { LEAK: 'leak', BAT: 'low_battery' },
  })
  await s.admin('POST', `/workspaces/${workspaceId}/profiles`, {
    key: 'bin64',
    name: 'B64',
    kind: 'saldo',
    unit: 'm3',
    decoder: layout('base64'),
  })
  const frame = Buffer.from([0x00, 0x00, 0x30, 0x39, 0b11])
  const r = await report([
    { meter: 'bh', profile: 'binhex', payload: frame.toString('hex'), recorded_at: at(0) },
    { meter: 'bb', profile: 'bin64', payload: frame.toString('base64'), recorded_at: at(0) },
  ])
  t.equal(r.status, 201, r.text)
  for (const id of ['bh', 'bb']) {
    const m = (await s.app.parts.meters.byIdentifier(workspaceId, id))!
    const [row] = await s.app.parts.store.sql.query<any>(
      `SELECT value FROM readings WHERE meter_id = ${m.id}`,
    )
    t.equal(row.value, 123.45)
    // status reports ride on readings rows and reach their table with the rollup feed
    await statusCurrent(s.app.parts.store.sql)
    const [st] = await s.app.parts.store.sql.query<any>(
      `SELECT raw_flags, statuses FROM status_reports WHERE meter_id = ${m.id}`,
    )
    t.same(st.raw_flags, ['LEAK', 'BAT'])
    t.same([...st.statuses].sort(), id === 'bh' ? ['leak', 'low_battery'] : ['error'])
  }
})

t.test('one telegram heard by several gateways: the repeats are duplicates', async (t) => {
  const v = visible.find((x: any) => x.driver === 'amiplus' && x.register)
  // gateway A as sent, gateway B 20 s later with a CRC after the frame, C with an RSSI byte
  const crc = 'ABCD'
  const first = await report([tg(v.telegram, 50)])
  t.equal(first.status, 201, first.text)
  t.equal(first.body.results?.[0]?.status, 'created', first.text)
  const later = await report([
    {
      ...tg(v.telegram + crc, 50),
      recorded_at: new Date(Date.parse(at(50)) + 20_000).toISOString(),
    },
    {
      ...tg(v.telegram + 'C3', 50),
      recorded_at: new Date(Date.parse(at(50)) + 40_000).toISOString(),
    },
  ])
  t.equal(later.status, 200, 'nothing new')
  t.same(
    later.body.results.map((r: any) => r.status),
    ['duplicate', 'duplicate'],
  )
  t.match(later.body.results[0].reason, /repeat of the same telegram/)
  t.equal(later.body.duplicates, 2)
  t.equal(later.body.rejected, 0)
  // a retry of the first (same recorded_at) is the spec's duplicate, not a repeat
  const retry = await report([tg(v.telegram, 50)])
  t.equal(retry.body.results[0].status, 'duplicate')
  t.notOk(retry.body.results[0].reason)
  // another access number is another telegram
  const b = Buffer.from(v.telegram, 'hex')
  const tpl = 10 // CI 7A/72: ACC right after the CI (short) or after the 8-byte address (long)
  b[b[tpl] === 0x72 ? tpl + 9 : tpl + 1] ^= 0x01
  const other = await report([tg(b.toString('hex'), 51)])
  t.equal(other.body.results[0].status, 'created', other.text)
  const m = (await s.app.parts.meters.byIdentifier(workspaceId, v.id))!
  const [row] = await s.app.parts.store.sql.query<any>(
    `SELECT count() AS n FROM readings FINAL WHERE meter_id = ${m.id}`,
  )
  t.equal(Number(row.n), 2, 'two readings stored: the first telegram and the other one')
})

t.test('new meters heard by several gateways at once: one report creates each', async (t) => {
  const { token: tok, workspaceId: ws } = await s.tenant()
  const hook = await s.admin('POST', `/workspaces/${ws}/event-subscriptions`, {
    url: 'http://127.0.0.1:9/never',
    events: ['meter.created'],
  })
  // 40 meters never heard, each telegram sent by 4 gateways with receive times 1 ms apart,
  // the four requests at once; a 5th gateway's request also brings each meter's next telegram.
  const ids = Array.from({ length: 40 }, (_, i) => 71_000_000 + i)
  const heard = (gw: number) =>
    ids.map((id, i) => ({
      profile: 'wmbus_oms',
      payload: { telegram: fullFrame(id, 1000 + i) },
      recorded_at: new Date(Date.parse(at(55)) + gw).toISOString(),
    }))
  const later = ids.map((id, i) => ({
    profile: 'wmbus_oms',
    payload: { telegram: fullFrame(id, 2000 + i) },
    recorded_at: at(56),
  }))
  const send = (readings: unknown[]) =>
    s.call('POST', '/api/v1/reportData', { token: tok, body: { readings } })
  const rs = await Promise.all([
    send(heard(0)),
    send(heard(1)),
    send(heard(2)),
    send([...heard(3), ...later]),
  ])
  t.ok(
    rs.every((r) => r.status === 200 || r.status === 201),
    rs.map((r) => r.text).join(),
  )
  const first = rs.flatMap((r) => r.body.results.slice(0, ids.length))
  t.equal(
    first.filter((x: any) => x.status === 'created').length,
    ids.length,
    'each telegram created once',
  )
  t.equal(
    first.filter((x: any) => x.status === 'duplicate').length,
    3 * ids.length,
    'the other gateways: duplicates',
  )
  t.ok(
    first.every((x: any) => x.status === 'created' || /repeat of the same telegram/.test(x.reason)),
    'answered as repeats',
  )
  t.ok(
    rs[3]!.body.results.slice(ids.length).every((x: any) => x.status === 'created'),
    'the next telegrams stored',
  )
  const [m] = await s.app.parts.store.sql.query<{ n: string; ids: string }>(
    `SELECT count() AS n, uniqExact(meter_identifier) AS ids FROM meters FINAL
     WHERE workspace_id = {ws:UInt64} AND deleted = 0`,
    { ws },
  )
  t.equal(Number(m!.n), ids.length, 'one meter per identity')
  const [r] = await s.app.parts.store.sql.query<{ n: string }>(
    `SELECT count() AS n FROM readings FINAL WHERE workspace_id = {ws:UInt64}`,
    { ws },
  )
  t.equal(Number(r!.n), 2 * ids.length, 'two readings per meter')
  const [e] = await s.app.parts.store.sql.query<{ n: string; ids: string }>(
    `SELECT count() AS n, uniqExact(JSONExtractUInt(body, 'data', 'meter', 'id')) AS ids
       FROM event_deliveries FINAL
      WHERE subscription_id = {sub:UInt64} AND event = 'meter.created'`,
    { sub: hook.data.id },
  )
  t.same([Number(e!.n), Number(e!.ids)], [ids.length, ids.length], 'one meter.created per meter')
})

t.test(
  'a plain telegram heard again is answered before it is decoded; a copy of one the decoder refuses gets its verdict',
  async (t) => {
    // a tenant of its own: the file's first one is near its hourly provisioning limit
    const { token: tok } = await s.tenant()
    const report = (readings: unknown[]) =>
      s.call('POST', '/api/v1/reportData', { token: tok, body: { readings } })
    const decoded: number[] = []
    const pool = s.app.parts.decoder
    const onDecode = (m: unknown) => {
      const e = m as DecodeEvent
      if (e.pool === pool && e.kind === 'telegram') decoded.push(e.count)
    }
    decodeChannel.subscribe(onDecode)
    t.teardown(() => decodeChannel.unsubscribe(onDecode))
    const heardAt = (hex: string, ms: number) => ({
      ...tg(hex, 58),
      recorded_at: new Date(Date.parse(at(58)) + ms).toISOString(),
    })
    const hex = fullFrame(73_000_001, 6000)
    const first = await report([heardAt(hex, 0)])
    t.equal(first.body.results[0].status, 'created', first.text)
    const again = await report([heardAt(hex, 20_000), heardAt(hex + 'C3', 40_000)])
    t.same(
      again.body.results.map((r: any) => r.status),
      ['duplicate', 'duplicate'],
      again.text,
    )
    t.same(decoded, [1], 'only the first sighting went to the decoder')

    // A compact frame of a format nobody taught: the decoder refuses it. Its copies, in the
    // same request and in the next one, are refused alike, not answered as repeats.
    const compact = compactFrame(73_000_002, 7000)
    const both = await report([heardAt(compact, 0), heardAt(compact, 1)])
    t.same(
      both.body.results.map((r: any) => r.status),
      ['rejected_undecodable', 'rejected_undecodable'],
      both.text,
    )
    t.match(both.body.results[1].reason, /compact frame/)
    const next = await report([heardAt(compact, 20_000)])
    t.equal(next.body.results[0].status, 'rejected_undecodable', next.text)
  },
)

t.test('a first sighting not stored gives up its claim: the next report is stored', async (t) => {
  // The plan allows no meter: the first gateway's report of a new meter is refused.
  const { token: tok, workspaceId: ws } = await s.tenant({ workspace: { plan_meter_limit: 0 } })
  const hex = fullFrame(72_000_001, 5000)
  const heardAt = (ms: number) =>
    s.call('POST', '/api/v1/reportData', {
      token: tok,
      body: {
        readings: [
          {
            profile: 'wmbus_oms',
            payload: { telegram: hex },
            recorded_at: new Date(Date.parse(at(57)) + ms).toISOString(),
          },
        ],
      },
    })
  const first = await heardAt(0)
  t.equal(first.body.results[0].status, 'rejected_plan_limit', first.text)
  await s.admin('PATCH', `/workspaces/${ws}`, { plan_meter_limit: null })
  const second = await heardAt(20_000)
  t.equal(second.body.results[0].status, 'created', `a second gateway's report: ${second.text}`)
  const third = await heardAt(40_000)
  t.equal(third.body.results[0].status, 'duplicate', 'a third repeats the second')
  t.match(third.body.results[0].reason, /repeat of the same telegram/)
})

/**
 * Issue 13, telegram ingest: a meter whose main register has no unit (a heat cost allocator)
 * never has a valid reading (no canonical value). Once its window drops an old reading (6 h
 * span) or reloads, the window can never hold NEIGHBOURHOOD valid ones; every turn asked the
 * store for neighbours the store does not have either: one readings query per request
 * (~100-450 ms of chDB time each in the telegram gateway bench). The actor now remembers that
 * the store holds no further valid reading (MeterActor.validComplete).
 */
t.test(
  'a unit-less telegram meter in steady state asks the store for no neighbours',
  // In cluster mode (Redis meter locks) the meter's first turn found no stamp and reloaded
  // the meter it had just created: a window from the store is not known to be complete,
  // so the look-up came one turn later (turns.ts, `untouched`).
  async (t) => {
    const v = visible.find((x: any) => x.source === 'drivers/src/bfw240radio.xmq#1')
    const frame = (acc: number) => {
      const b = Buffer.from(v.telegram, 'hex')
      b[11] = acc // access number (short TPL header, CI 7A at byte 10): not a repeat
      return b.toString('hex')
    }
    const first = await report([tg(frame(1), -600, { meter: 'hca-1' })])
    t.equal(first.body.results[0].status, 'created', first.text)
    t.equal(first.body.results[0].kind, 'saldo')
    const history = s.app.parts.actors.env.history as unknown as {
      queries: { neighbourhood: number }
    }
    // 7 h later: the first reading leaves the 6 h window
    const r = await report([tg(frame(2), -180, { meter: 'hca-1' })])
    t.equal(r.body.results[0].status, 'created', r.text)
    const before = history.queries.neighbourhood
    for (let k = 0; k < 4; k++) {
      const a = await report([tg(frame(3 + k), -170 + k * 10, { meter: 'hca-1' })])
      t.equal(a.body.results[0].status, 'created', a.text)
    }
    t.equal(history.queries.neighbourhood - before, 0, 'no neighbourhood look-ups')
  },
)

t.test(
  'request after request, the decoder reuses its result buffers and every payload is stored byte for byte',
  async (t) => {
    const core = loadWasmCore()
    const frames = visible
      .filter((v: any) => !v.key && decodeTelegramSync(core, v.telegram, null).status === 'ok')
      .slice(0, 40)
    t.ok(frames.length >= 20, `${frames.length} plain frames`)
    const decoder = s.app.parts.decoder
    for (let round = 0; round < 4; round++) {
      // Three requests overlapping (a buffer taken back too early would be written over by
      // another's results before its own rows were), a different mix each round; the second
      // round's results outgrow the first one's buffers.
      const n = round === 1 ? 30 : 10
      const items = Array.from({ length: 3 * n }, (_, i) => {
        const v = frames[(i * 7 + round) % frames.length]
        return tg(v.telegram, -300 + round, { meter: `reuse-${i}` })
      })
      const sent: ReturnType<typeof report>[] = []
      for (let k = 0; k < 3; k++) {
        sent.push(report(items.slice(k * n, k * n + n)))
        await new Promise((r) => setTimeout(r, 5)) // each decoded while the one before is written
      }
      const answers = await Promise.all(sent)
      for (const r of answers) {
        t.equal(r.status, 201, r.text)
        t.ok(
          r.body.results.every((x: any) => x.status === 'created'),
          `round ${round}: all created`,
        )
      }
      t.ok(decoder.spareBuffers > 0, `round ${round}: result buffers were taken back`)
      const rows = await s.app.parts.store.sql.query<{ meter: string; raw_payload: string }>(
        `SELECT m.meter_identifier AS meter, r.raw_payload AS raw_payload
           FROM readings AS r FINAL INNER JOIN meters AS m FINAL ON m.id = r.meter_id
          WHERE m.meter_identifier LIKE 'reuse-%' AND r.recorded_at = parseDateTime64BestEffort({at:String}, 3)`,
        { at: at(-300 + round) },
      )
      const stored = new Map(rows.map((x) => [x.meter, x.raw_payload]))
      let same = 0
      items.forEach((it, i) => {
        const o = decodeTelegramSync(core, it.payload.telegram, null)
        if (o.status === 'ok' && stored.get(`reuse-${i}`) === o.rawPayload) same++
      })
      t.equal(same, items.length, `round ${round}: every payload stored as decoded`)
    }
  },
)
