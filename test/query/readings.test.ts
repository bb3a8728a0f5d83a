import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { aggregateReadings } from '../../src/store/readings-buckets.js'
import { markHoursMissedByACrash } from '../../src/store/rollup.js'
import { rollupCurrent } from '../../src/store/rollup-feed.js'
import { chTime } from '../../src/store/sql.js'
import { startTestServer } from '../helpers/server.js'
import { createMeter, insertReadings, qs } from './helpers.js'

const NOW = Date.parse('2025-06-15T12:00:00Z')
const clock = new ManualClock(NOW)
const s = await startTestServer({}, { clock })
t.teardown(() => s.close())
const a = await s.tenant()
const other = await s.tenant()
const get = (q: Record<string, string | number | undefined>, token = a.token) =>
  s.call('GET', `/api/v1/readings${qs(q)}`, { token })
const H = 3_600_000

t.test('raw: oldest first, row shape, flags null when clean, canonical null kept', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'raw-1', unit: 'kwh' })
  await insertReadings(s, a.workspaceId, [
    { meter: m.id, at: '2025-06-14T10:00:00Z', value: 2 },
    { meter: m.id, at: '2025-06-14T09:00:00Z', value: 1 },
    { meter: m.id, kind: 'saldo', at: '2025-06-14T09:00:00Z', value: 100 },
    {
      meter: m.id,
      at: '2025-06-14T11:00:00Z',
      value: 5,
      unit: 'm3',
      canonical: null,
      flags: ['unit_mismatch'],
    },
  ])
  const r = await get({ meter_id: m.id })
  t.equal(r.status, 200)
  t.equal(r.body.aggregate, 'raw')
  t.equal(r.body.to, new Date(NOW).toISOString(), 'to defaults to now')
  t.equal(r.body.from, new Date(NOW - 7 * 86_400_000).toISOString(), 'from defaults to to − 7 days')
  t.same(r.body.meta, { current_page: 1, per_page: 100, total: 4, last_page: 1 })
  t.same(r.body.data[0], {
    meter_id: m.id,
    meter_identifier: 'raw-1',
    kind: 'consumption',
    value: 1,
    unit: 'kwh',
    canonical_value: 1,
    canonical_unit: 'kwh',
    display_value: 1,
    display_unit: 'kwh',
    quality_flags: null,
    recorded_at: '2025-06-14T09:00:00.000Z',
  })
  t.same(
    r.body.data.map((x: any) => [x.kind, x.value]),
    [
      ['consumption', 1],
      ['saldo', 100],
      ['consumption', 2],
      ['consumption', 5],
    ],
  )
  t.same(r.body.data[3].quality_flags, ['unit_mismatch'])
  t.equal(r.body.data[3].canonical_value, null)
  const k = await get({ meter_id: m.id, kind: 'saldo' })
  t.equal(k.body.data.length, 1)
})

t.test('raw: new versions and replays show exactly one row per identity (newest)', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'ver-1', unit: 'kwh' })
  const at = '2025-06-10T08:00:00Z'
  await insertReadings(s, a.workspaceId, [{ meter: m.id, at, value: 3, version: 10 }])
  await insertReadings(s, a.workspaceId, [{ meter: m.id, at, value: 3, version: 10 }]) // replay
  await insertReadings(s, a.workspaceId, [
    { meter: m.id, at, value: 3, flags: ['implausible_rate'], version: 11 },
  ])
  const r = await get({ meter_id: m.id })
  t.equal(r.body.meta.total, 1)
  t.same(
    r.body.data.map((x: any) => x.quality_flags),
    [['implausible_rate']],
  )
})

t.test('raw: pagination meta and pages', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'page-1', unit: 'kwh' })
  const base = Date.parse('2025-06-01T00:00:00Z')
  await insertReadings(
    s,
    a.workspaceId,
    Array.from({ length: 25 }, (_, i) => ({ meter: m.id, at: base + i * 900_000, value: i })),
  )
  const q = {
    meter_id: m.id,
    from: '2025-06-01T00:00:00Z',
    to: '2025-06-02T00:00:00Z',
    per_page: 10,
  }
  const p1 = await get({ ...q, page: 1 })
  t.same(p1.body.meta, { current_page: 1, per_page: 10, total: 25, last_page: 3 })
  t.same(
    p1.body.data.map((x: any) => x.value),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  )
  const p3 = await get({ ...q, page: 3 })
  t.same(
    p3.body.data.map((x: any) => x.value),
    [20, 21, 22, 23, 24],
  )
  const p9 = await get({ ...q, page: 9 })
  t.same(p9.body.data, [])
  t.same(p9.body.meta, { current_page: 9, per_page: 10, total: 25, last_page: 3 })
  const max = await get({ ...q, per_page: 1000 })
  t.equal(max.status, 200)
  const over = await get({ ...q, per_page: 1001 })
  t.equal(over.status, 422)
  t.ok(over.body.errors.per_page)
})

t.test('raw: tz adds recorded_at_local with the offset in force', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'tz-raw', unit: 'kwh' })
  await insertReadings(s, a.workspaceId, [
    { meter: m.id, at: '2025-03-30T00:30:00Z', value: 1 },
    { meter: m.id, at: '2025-03-30T01:30:00Z', value: 2 },
  ])
  const r = await get({
    meter_id: m.id,
    from: '2025-03-29T00:00:00Z',
    to: '2025-03-31T00:00:00Z',
    tz: 'Europe/Berlin',
  })
  t.same(
    r.body.data.map((x: any) => x.recorded_at_local),
    ['2025-03-30T01:30:00.000+01:00', '2025-03-30T03:30:00.000+02:00'],
  )
  const k = await get({
    meter_id: m.id,
    from: '2025-03-29T00:00:00Z',
    to: '2025-03-31T00:00:00Z',
    tz: 'Asia/Kathmandu',
  })
  t.equal(k.body.data[0].recorded_at_local, '2025-03-30T06:15:00.000+05:45')
  const u = await get({ meter_id: m.id, from: '2025-03-29T00:00:00Z', to: '2025-03-31T00:00:00Z' })
  t.notOk('recorded_at_local' in u.body.data[0])
})

// Independent reference: buckets of canonical values computed here from the inserted rows.
function reference(
  rows: { at: number; v: number | null; meter: number; kind: string }[],
  keyOf: (t: number) => string,
) {
  const out = new Map<string, { c: number; s: number; lo: number; hi: number }>()
  for (const r of rows) {
    if (r.v === null) continue
    const k = `${keyOf(r.at)}|${r.meter}|${r.kind}`
    const b = out.get(k) ?? { c: 0, s: 0, lo: Infinity, hi: -Infinity }
    b.c++
    b.s += r.v
    b.lo = Math.min(b.lo, r.v)
    b.hi = Math.max(b.hi, r.v)
    out.set(k, b)
  }
  return out
}
const utcLabel = (t: number) => chTime(t).slice(0, 19)

t.test(
  'hourly and daily aggregates: canonical values only, exact under versions and replays',
  async (t) => {
    const m1 = await createMeter(s, a.token, { meter_identifier: 'agg-1', unit: 'wh' })
    const m2 = await createMeter(s, a.token, { meter_identifier: 'agg-2', unit: 'wh' })
    const base = Date.parse('2025-05-01T00:00:00Z')
    const rows: { at: number; v: number | null; meter: number; kind: string }[] = []
    const ins = []
    for (const m of [m1, m2])
      for (let i = 0; i < 4 * 24 * 3; i++) {
        const at = base + i * 900_000
        const v = ((i * 7 + m.id) % 5) + 0.5
        const canonical = i % 13 === 0 ? null : v
        rows.push({ at, v: canonical, meter: m.id, kind: 'consumption' })
        ins.push({
          meter: m.id,
          at,
          value: v * 1000,
          unit: 'wh',
          canonical,
          canonicalUnit: canonical === null ? null : 'kwh',
        })
      }
    await insertReadings(s, a.workspaceId, ins)
    // Replays of identical rows and new versions (flags only, and a backfill changing the value)
    await insertReadings(s, a.workspaceId, ins.slice(10, 30))
    await insertReadings(
      s,
      a.workspaceId,
      ins.slice(40, 45).map((r) => ({ ...r, flags: ['implausible_rate'] })),
    )
    const changed = ins[50]!
    await insertReadings(s, a.workspaceId, [{ ...changed, canonical: 42 }])
    rows.find((r) => r.meter === changed.meter && r.at === changed.at)!.v = 42

    const range = { from: '2025-05-01T00:00:00Z', to: '2025-05-03T23:59:59.999Z' }
    const d = await get({
      group_id: undefined,
      ...range,
      aggregate: 'daily',
      per_page: 1000,
      kind: 'consumption',
    })
    t.equal(d.status, 200)
    const mine = d.body.data.filter((x: any) => x.meter_id === m1.id || x.meter_id === m2.id)
    const ref = reference(rows, (x) => utcLabel(Math.floor(x / 86_400_000) * 86_400_000))
    t.equal(mine.length, ref.size)
    for (const b of mine) {
      const e = ref.get(`${b.bucket_start}|${b.meter_id}|${b.kind}`)!
      t.ok(e, b.bucket_start)
      t.equal(b.reading_count, e.c, `count ${b.bucket_start}`)
      t.ok(Math.abs(b.sum - e.s) < 1e-9, `sum ${b.bucket_start} ${b.sum} vs ${e.s}`)
      t.equal(b.min, e.lo)
      t.equal(b.max, e.hi)
      t.ok(Math.abs(b.avg - e.s / e.c) < 1e-9)
    }
    t.equal(mine[0].bucket_start, '2025-05-01 00:00:00')

    const h = await get({ meter_id: m1.id, ...range, aggregate: 'hourly', per_page: 1000 })
    const refH = reference(
      rows.filter((r) => r.meter === m1.id),
      (x) => utcLabel(Math.floor(x / H) * H),
    )
    t.equal(h.body.meta.total, refH.size)
    for (const b of h.body.data) {
      const e = refH.get(`${b.bucket_start}|${b.meter_id}|${b.kind}`)!
      t.equal(b.reading_count, e.c)
      t.ok(Math.abs(b.sum - e.s) < 1e-9)
    }
    // An odd range (partial first/last hours) counts the same readings as the raw rows do.
    const odd = { meter_id: m1.id, from: '2025-05-01T00:20:00Z', to: '2025-05-02T05:10:00Z' }
    const rawOdd = await get({ ...odd, per_page: 1000 })
    const aggOdd = await get({ ...odd, aggregate: 'daily' })
    const canon = rawOdd.body.data.filter((x: any) => x.canonical_value !== null)
    t.equal(
      aggOdd.body.data.reduce((n: number, b: any) => n + b.reading_count, 0),
      canon.length,
    )
    const sumRaw = canon.reduce((n: number, x: any) => n + x.canonical_value, 0)
    t.ok(Math.abs(aggOdd.body.data.reduce((n: number, b: any) => n + b.sum, 0) - sumRaw) < 1e-9)
    // Same answer through the raw path (a zone without whole-hour offsets, but UTC+05:45 days differ) —
    // compare the hourly total instead.
    const k = await get({ ...odd, aggregate: 'hourly', tz: 'Asia/Kathmandu', per_page: 1000 })
    t.equal(
      k.body.data.reduce((n: number, b: any) => n + b.reading_count, 0),
      canon.length,
    )
  },
)

t.test('aggregate pagination meta', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'aggp', unit: 'kwh' })
  const base = Date.parse('2025-04-01T00:00:00Z')
  await insertReadings(
    s,
    a.workspaceId,
    Array.from({ length: 10 }, (_, i) => ({ meter: m.id, at: base + i * H, value: 1 })),
  )
  const r = await get({
    meter_id: m.id,
    from: '2025-04-01',
    to: '2025-04-02',
    aggregate: 'hourly',
    per_page: 4,
    page: 3,
  })
  t.same(r.body.meta, { current_page: 3, per_page: 4, total: 10, last_page: 3 })
  t.same(
    r.body.data.map((b: any) => b.bucket_start),
    ['2025-04-01 08:00:00', '2025-04-01 09:00:00'],
  )
  const beyond = await get({
    meter_id: m.id,
    from: '2025-04-01',
    to: '2025-04-02',
    aggregate: 'hourly',
    per_page: 4,
    page: 5,
  })
  t.same(beyond.body.meta, { current_page: 5, per_page: 4, total: 10, last_page: 3 })
})

t.test('group_id selects the subtree; other workspaces are invisible', async (t) => {
  const g = (await s.call('POST', '/api/v1/meterGroups', { token: a.token, body: { name: 'G' } }))
    .body.data
  const g1 = (
    await s.call('POST', '/api/v1/meterGroups', {
      token: a.token,
      body: { name: 'G1', parent_id: g.id },
    })
  ).body.data
  const g2 = (await s.call('POST', '/api/v1/meterGroups', { token: a.token, body: { name: 'G2' } }))
    .body.data
  const inG = await createMeter(s, a.token, { meter_identifier: 'grp-a', group_id: g.id })
  const inG1 = await createMeter(s, a.token, { meter_identifier: 'grp-b', group_id: g1.id })
  const outside = await createMeter(s, a.token, { meter_identifier: 'grp-c', group_id: g2.id })
  const at = '2025-06-12T00:00:00Z'
  await insertReadings(
    s,
    a.workspaceId,
    [inG, inG1, outside].map((m) => ({ meter: m.id, at, value: 1 })),
  )
  const r = await get({ group_id: g.id })
  t.same(r.body.data.map((x: any) => x.meter_identifier).sort(), ['grp-a', 'grp-b'])
  const sub = await get({ group_id: g1.id })
  t.same(
    sub.body.data.map((x: any) => x.meter_identifier),
    ['grp-b'],
  )
  const empty = (
    await s.call('POST', '/api/v1/meterGroups', { token: a.token, body: { name: 'Empty' } })
  ).body.data
  const e = await get({ group_id: empty.id })
  t.equal(e.status, 200)
  t.same(e.body.data, [])
  const foreignMeter = await get({ meter_id: inG.id }, other.token)
  t.equal(foreignMeter.status, 422)
  t.ok(foreignMeter.body.errors.meter_id)
  const foreignGroup = await get({ group_id: g.id }, other.token)
  t.equal(foreignGroup.status, 422)
  t.ok(foreignGroup.body.errors.group_id)
  const all = await get({}, other.token)
  t.same(all.body.data, [])
})

t.test('every bad parameter is a 422 naming it', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'val-1' })
  const cases: [Record<string, string | number>, string[]][] = [
    [{ meter_id: 'x' }, ['meter_id']],
    [{ meter_id: 0 }, ['meter_id']],
    [{ meter_id: 1.5 }, ['meter_id']],
    [{ meter_id: 99999999 }, ['meter_id']],
    [{ group_id: 'x' }, ['group_id']],
    [{ group_id: 99999999 }, ['group_id']],
    [{ meter_id: m.id, group_id: 1 }, ['meter_id', 'group_id']],
    [{ kind: 'both' }, ['kind']],
    [{ aggregate: 'weekly' }, ['aggregate']],
    [{ tz: 'Mars/Olympus' }, ['tz']],
    [{ tz: '' }, ['tz']],
    [{ from: 'yesterday' }, ['from']],
    [{ to: '2025-13-01' }, ['to']],
    [{ from: '2025-02-30' }, ['from']],
    [{ from: '2025-06-10', to: '2025-06-01' }, ['from', 'to']],
    [{ from: '2024-01-01', to: '2025-01-02' }, ['from', 'to']],
    [{ from: '2025-06-20' }, ['from']],
    [{ page: 0 }, ['page']],
    [{ page: 'a' }, ['page']],
    [{ per_page: 0 }, ['per_page']],
    [{ per_page: -5 }, ['per_page']],
    [{ derive: 'consumption' }, ['meter_id']],
    [{ derive: 'cost', meter_id: m.id }, ['derive']],
    [{ derive: 'consumption', meter_id: m.id, aggregate: 'daily' }, ['aggregate']],
    [{ derive: 'consumption', meter_id: m.id, kind: 'consumption' }, ['kind']],
    [{ interpolate: 'linear', meter_id: m.id }, ['interpolate']],
    [{ interpolate: 'cubic', derive: 'consumption', meter_id: m.id }, ['interpolate']],
  ]
  for (const [q, fields] of cases) {
    const r = await get(q)
    t.equal(r.status, 422, JSON.stringify(q))
    for (const f of fields) t.ok(r.body.errors?.[f], `${JSON.stringify(q)} names ${f}: ${r.text}`)
  }
  const ok366 = await get({ from: '2024-01-01T00:00:00Z', to: '2025-01-01T00:00:00Z' })
  t.equal(ok366.status, 200, 'exactly 366 days is allowed')
  const auth = await s.call('GET', '/api/v1/readings')
  t.equal(auth.status, 401)
  const user = await s.admin('POST', `/workspaces/${a.workspaceId}/users`, {
    email: 'w@x.io',
    permissions: ['groups.manage'],
  })
  const tok = (
    await s.admin('POST', `/workspaces/${a.workspaceId}/tokens`, {
      user_id: user.data.id,
      scopes: ['data:report'],
    })
  ).data.token
  t.equal((await get({}, tok)).status, 403)
})

// DST and odd offsets: hourly readings for two days around each change; the local day of the
// change holds 23 or 25 readings and its bucket_start is local midnight.
async function hourlySeries(identifier: string, fromIso: string, hours: number) {
  const m = await createMeter(s, a.token, { meter_identifier: identifier, unit: 'kwh' })
  const base = Date.parse(fromIso)
  await insertReadings(
    s,
    a.workspaceId,
    Array.from({ length: hours }, (_, i) => ({ meter: m.id, at: base + i * H, value: 1 })),
  )
  return m
}
const days = async (meterId: number, tz: string, from: string, to: string) => {
  const r = await get({ meter_id: meterId, aggregate: 'daily', tz, from, to })
  t.equal(r.status, 200)
  return Object.fromEntries(r.body.data.map((b: any) => [b.bucket_start, b.reading_count]))
}

t.test('DST Europe/Berlin: 23-hour spring day and 25-hour autumn day', async (t) => {
  const spring = await hourlySeries('ber-spring', '2025-03-28T23:00:00Z', 24 * 4)
  t.same(await days(spring.id, 'Europe/Berlin', '2025-03-29T00:00:00', '2025-03-31T23:59:59'), {
    '2025-03-29 00:00:00': 24,
    '2025-03-30 00:00:00': 23,
    '2025-03-31 00:00:00': 24,
  })
  const autumn = await hourlySeries('ber-autumn', '2025-10-24T22:00:00Z', 24 * 4)
  t.same(await days(autumn.id, 'Europe/Berlin', '2025-10-25T00:00:00', '2025-10-27T23:59:59'), {
    '2025-10-25 00:00:00': 24,
    '2025-10-26 00:00:00': 25,
    '2025-10-27 00:00:00': 24,
  })
  const hourly = await get({
    meter_id: spring.id,
    aggregate: 'hourly',
    tz: 'Europe/Berlin',
    from: '2025-03-30T00:00:00',
    to: '2025-03-30T04:00:00',
  })
  t.same(
    hourly.body.data.map((b: any) => b.bucket_start),
    ['2025-03-30 00:00:00', '2025-03-30 01:00:00', '2025-03-30 03:00:00', '2025-03-30 04:00:00'],
  )
  const fall = await get({
    meter_id: autumn.id,
    aggregate: 'hourly',
    tz: 'Europe/Berlin',
    from: '2025-10-26T00:00:00Z',
    to: '2025-10-26T01:59:59Z',
  })
  t.same(
    fall.body.data.map((b: any) => b.bucket_start),
    ['2025-10-26 02:00:00', '2025-10-26 02:00:00'],
    'the repeated hour is two buckets',
  )
})

t.test('DST America/New_York: both changes', async (t) => {
  const spring = await hourlySeries('ny-spring', '2025-03-08T05:00:00Z', 24 * 3)
  t.same(await days(spring.id, 'America/New_York', '2025-03-08', '2025-03-10T23:59:59'), {
    '2025-03-08 00:00:00': 24,
    '2025-03-09 00:00:00': 23,
    '2025-03-10 00:00:00': 24,
  })
  const autumn = await hourlySeries('ny-autumn', '2025-11-01T04:00:00Z', 24 * 3 + 1)
  t.same(await days(autumn.id, 'America/New_York', '2025-11-01', '2025-11-03T23:59:59'), {
    '2025-11-01 00:00:00': 24,
    '2025-11-02 00:00:00': 25,
    '2025-11-03 00:00:00': 24,
  })
})

t.test(':45 and :30 zones: Asia/Kathmandu and Australia/Adelaide', async (t) => {
  // Kathmandu is UTC+05:45 all year: local midnight is 18:15 UTC.
  const k = await createMeter(s, a.token, { meter_identifier: 'ktm', unit: 'kwh' })
  const base = Date.parse('2025-02-01T00:00:00Z')
  await insertReadings(
    s,
    a.workspaceId,
    Array.from({ length: 96 * 3 }, (_, i) => ({ meter: k.id, at: base + i * 900_000, value: 1 })),
  )
  const kd = await get({
    meter_id: k.id,
    aggregate: 'daily',
    tz: 'Asia/Kathmandu',
    from: '2025-02-01T00:00:00Z',
    to: '2025-02-03T23:59:59Z',
  })
  t.same(
    kd.body.data.map((b: any) => [b.bucket_start, b.reading_count]),
    [
      ['2025-02-01 00:00:00', 73], // 00:00Z..18:00Z = 05:45..23:45 local
      ['2025-02-02 00:00:00', 96],
      ['2025-02-03 00:00:00', 96],
      ['2025-02-04 00:00:00', 23], // 18:15Z..23:45Z
    ],
  )
  const kh = await get({
    meter_id: k.id,
    aggregate: 'hourly',
    tz: 'Asia/Kathmandu',
    from: '2025-02-01T00:00:00Z',
    to: '2025-02-01T02:59:59Z',
  })
  t.same(
    kh.body.data.map((b: any) => [b.bucket_start, b.reading_count]),
    [
      ['2025-02-01 05:00:00', 1],
      ['2025-02-01 06:00:00', 4],
      ['2025-02-01 07:00:00', 4],
      ['2025-02-01 08:00:00', 3],
    ],
  )
  // Adelaide: +10:30 → +09:30 on 2025-04-06 (a 25-hour day), +09:30 → +10:30 on 2025-10-05 (23 hours).
  const ad = await hourlySeries('adl', '2025-04-04T13:30:00Z', 24 * 3 + 1)
  t.same(await days(ad.id, 'Australia/Adelaide', '2025-04-05', '2025-04-07T23:59:59'), {
    '2025-04-05 00:00:00': 24,
    '2025-04-06 00:00:00': 25,
    '2025-04-07 00:00:00': 24,
  })
  const ad2 = await hourlySeries('adl2', '2025-10-03T14:30:00Z', 24 * 3)
  t.same(await days(ad2.id, 'Australia/Adelaide', '2025-10-04', '2025-10-06T23:59:59'), {
    '2025-10-04 00:00:00': 24,
    '2025-10-05 00:00:00': 23,
    '2025-10-06 00:00:00': 24,
  })
})

t.test(
  'derive=consumption: deltas, gaps, rollover, exchange in meter units, interpolation',
  async (t) => {
    const m = await createMeter(s, a.token, {
      meter_identifier: 'drv',
      unit: 'wh',
      expected_interval_minutes: 60,
      rollover_max: 10_000,
    })
    const base = Date.parse('2025-06-01T00:00:00Z')
    const pts: [number, number][] = [
      [0, 1000], // Wh
      [1, 3000],
      [4, 6000], // gap of 3 h
      [5, 9000],
      [6, 1000], // rollover at 10,000 Wh: 2 kWh
      [7, 500], // unexplained decrease: unknown
      [8, 700],
      [10, 200], // exchange in between (old final 900, new initial 100): 0.2 + 0.1 kWh
    ]
    await insertReadings(
      s,
      a.workspaceId,
      pts.map(([h, v]) => ({
        meter: m.id,
        kind: 'saldo',
        at: base + h * H,
        value: v,
        unit: 'wh',
        canonical: v / 1000,
      })),
    )
    await insertReadings(s, a.workspaceId, [
      { meter: m.id, kind: 'consumption', at: base + 2 * H, value: 5 },
    ])
    await s.app.parts.store.sql.insert(
      'meter_exchanges',
      JSON.stringify({
        workspace_id: a.workspaceId,
        meter_id: m.id,
        id: 1,
        exchanged_at: chTime(base + 9 * H),
        old_final_value: 900,
        new_initial_value: 100,
        created_at: chTime(Date.now()),
      }),
    )
    const q = {
      meter_id: m.id,
      derive: 'consumption',
      from: '2025-06-01T00:00:00Z',
      to: '2025-06-01T12:00:00Z',
    }
    const r = await get(q)
    t.equal(r.status, 200)
    const rows = r.body.data
    t.same(
      rows.map((x: any) => [
        x.period_start.slice(11, 16),
        x.period_end.slice(11, 16),
        x.consumption === null ? null : +x.consumption.toFixed(9),
        x.gap,
        x.rollover,
        x.exchange,
        x.unknown,
        x.interpolated,
      ]),
      [
        ['00:00', '01:00', 2, false, false, false, false, false],
        ['01:00', '04:00', 3, true, false, false, false, false],
        ['04:00', '05:00', 3, false, false, false, false, false],
        ['05:00', '06:00', 2, false, true, false, false, false],
        ['06:00', '07:00', null, false, false, false, true, false],
        ['07:00', '08:00', 0.2, false, false, false, false, false],
        ['08:00', '10:00', 0.3, true, false, true, false, false],
      ],
    )
    t.equal(rows[0].unit, 'kwh')
    t.equal(r.body.meta.total, 7)
    const lin = await get({ ...q, interpolate: 'linear' })
    const slots = lin.body.data.filter((x: any) => x.interpolated)
    t.equal(slots.length, 5, 'three 1-hour slots for the 3-hour gap, two for the exchange gap')
    t.equal(
      slots.slice(0, 3).reduce((n: number, x: any) => n + x.consumption, 0),
      3,
      'slots sum to the bridged delta',
    )
    t.ok(lin.body.data.every((x: any) => x.consumption !== null || x.unknown))
    const paged = await get({ ...q, per_page: 2, page: 2 })
    t.same(paged.body.meta, { current_page: 2, per_page: 2, total: 7, last_page: 4 })
    t.equal(paged.body.data[0].period_start, rows[2].period_start)
  },
)

t.test('derive: exchange without both baselines is unknown', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'drv2', unit: 'kwh' })
  const base = Date.parse('2025-06-02T00:00:00Z')
  await insertReadings(s, a.workspaceId, [
    { meter: m.id, kind: 'saldo', at: base, value: 10 },
    { meter: m.id, kind: 'saldo', at: base + H, value: 3 },
  ])
  await s.app.parts.store.sql.insert(
    'meter_exchanges',
    JSON.stringify({
      workspace_id: a.workspaceId,
      meter_id: m.id,
      id: 2,
      exchanged_at: chTime(base + H / 2),
      old_final_value: 12,
      new_initial_value: null,
      created_at: chTime(Date.now()),
    }),
  )
  const r = await get({
    meter_id: m.id,
    derive: 'consumption',
    from: '2025-06-02T00:00:00Z',
    to: '2025-06-02T02:00:00Z',
  })
  t.match(r.body.data, [{ consumption: null, unknown: true, exchange: true }])
})

t.test(
  'many dirty hours (beyond the per-query list) fall back to the raw readings, still exact',
  async (t) => {
    const m = await createMeter(s, a.token, { meter_identifier: 'dirty-many', unit: 'kwh' })
    const base = Date.parse('2024-07-01T00:00:00Z')
    const rows = Array.from({ length: 5100 }, (_, i) => ({
      meter: m.id,
      at: base + i * H,
      value: 2,
    }))
    await insertReadings(s, a.workspaceId, rows)
    await insertReadings(
      s,
      a.workspaceId,
      rows.map((r) => ({ ...r, flags: ['implausible_rate'] })),
    )
    const r = await get({
      meter_id: m.id,
      aggregate: 'daily',
      from: '2024-07-01T00:00:00Z',
      to: '2025-01-31T00:00:00Z',
      per_page: 1000,
    })
    t.equal(r.status, 200)
    t.equal(
      r.body.data.reduce((n: number, b: any) => n + b.reading_count, 0),
      5100,
    )
    t.equal(
      r.body.data.reduce((n: number, b: any) => n + b.sum, 0),
      10200,
    )
    t.equal(r.body.data[0].reading_count, 24)
  },
)

t.test('aggregates never show readings pruned by retention', async (t) => {
  const w = await s.tenant({ workspace: { retention_days: 30 } })
  const m = await createMeter(s, w.token, { meter_identifier: 'ret', unit: 'kwh' })
  // NOW − 30 days = 2025-05-16T12:00Z; readings on both sides of the cut-off.
  const base = Date.parse('2025-05-14T00:00:00Z')
  await insertReadings(
    s,
    w.workspaceId,
    Array.from({ length: 96 }, (_, i) => ({ meter: m.id, at: base + i * H, value: 1 })),
  )
  const q = {
    meter_id: m.id,
    aggregate: 'daily',
    from: '2025-05-14T00:00:00Z',
    to: '2025-05-17T23:59:59Z',
  }
  const before = await get(q, w.token)
  t.same(
    before.body.data.map((b: any) => b.reading_count),
    [24, 24, 24, 24],
  )
  await s.admin('POST', '/scheduler/run')
  const after = await get(q, w.token)
  t.same(
    after.body.data.map((b: any) => [b.bucket_start, b.reading_count]),
    [
      ['2025-05-16 00:00:00', 12], // 12:00Z onwards survives the cut-off
      ['2025-05-17 00:00:00', 24],
    ],
  )
})

t.test('duplicates inside one insert and after rollup merges are still counted once', async (t) => {
  const m = await createMeter(s, a.token, { meter_identifier: 'dup-block', unit: 'kwh' })
  const at = Date.parse('2025-04-10T10:15:00Z')
  const r = { meter: m.id, at, value: 4 }
  await insertReadings(s, a.workspaceId, [
    r,
    { ...r, flags: ['implausible_rate'] },
    { meter: m.id, at: at + 60_000, value: 1 },
  ])
  const q = {
    meter_id: m.id,
    aggregate: 'hourly',
    from: '2025-04-10T00:00:00Z',
    to: '2025-04-10T23:59:59Z',
  }
  const one = await get(q)
  t.match(one.body.data, [{ bucket_start: '2025-04-10 10:00:00', reading_count: 2, sum: 5 }])
  await insertReadings(s, a.workspaceId, [{ ...r, version: 999_999_999 }])
  await s.app.parts.store.sql.exec('OPTIMIZE TABLE readings_hourly FINAL')
  const merged = await get(q)
  t.match(merged.body.data, [{ reading_count: 2, sum: 5, min: 1, max: 4 }])
  // a backfill that changes the canonical value: the newest version wins
  await insertReadings(s, a.workspaceId, [{ ...r, canonical: 10, version: 1_999_999_999 }])
  const changed = await get(q)
  t.match(changed.body.data, [{ reading_count: 2, sum: 11, min: 1, max: 10 }])
  // The parts-aware dirty check (used for large queries) finds the same dirty hour, before
  // and after the rollup parts are merged.
  await insertReadings(s, a.workspaceId, [{ ...r, canonical: 10, version: 2_999_999_999 }])
  const f = {
    ws: a.workspaceId,
    meterIds: [m.id],
    kind: null,
    from: Date.parse(q.from),
    to: Date.parse(q.to),
    plainCheckHours: 0,
  }
  for (const optimize of [false, true]) {
    if (optimize) await s.app.parts.store.sql.exec('OPTIMIZE TABLE readings_hourly FINAL')
    const direct = await aggregateReadings(s.app.parts.store.sql, f, 'hourly', null, {
      limit: 10,
      offset: 0,
    })
    t.equal(direct.dirtyHours, 1)
    t.match(direct.rows, [{ reading_count: 2, sum: 11, min: 1, max: 10 }])
  }
})

t.test(
  'readings a millisecond apart are distinct identities of their hour (migration 18)',
  async (t) => {
    const m = await createMeter(s, a.token, { meter_identifier: 'ms-apart', unit: 'kwh' })
    const hour = Date.parse('2025-04-12T10:00:00Z')
    // The hour's first and last milliseconds, one a millisecond on, one a second on, a minute.
    const offsets = [0, 1, 1_000, 3_540_000, 3_599_999]
    await insertReadings(
      s,
      a.workspaceId,
      offsets.map((o, i) => ({ meter: m.id, at: hour + o, value: i + 1 })),
    )
    await rollupCurrent(s.app.parts.store.sql)
    const [h] = await s.app.parts.store.sql.query<{ rows: string | number; ids: number[] }>(
      `SELECT sum(rows) AS rows, bitmapToArray(groupBitmapMergeState(ids)) AS ids
     FROM readings_hourly WHERE meter_id = {m:UInt64}`,
      { m: m.id },
    )
    // millisecond × 3600 + second of the hour: 10:00:00.000, 10:00:01.000, 10:59:00.000,
    // 10:00:00.001, 10:59:59.999 (a small bitmap lists them in no particular order)
    t.same(
      h!.ids.map(Number).sort((x, y) => x - y),
      [0, 1, 3_540, 3_600, 3_599_999],
    )
    t.equal(Number(h!.rows), 5)
    const direct = await aggregateReadings(
      s.app.parts.store.sql,
      {
        ws: a.workspaceId,
        meterIds: [m.id],
        kind: null,
        from: hour,
        to: hour + H - 1,
        plainCheckHours: 0,
      },
      'hourly',
      null,
      { limit: 10, offset: 0 },
    )
    t.equal(direct.dirtyHours, 0, 'a clean hour: every identity once')
    t.match(direct.rows, [{ reading_count: 5, sum: 15 }])
  },
)

t.test(
  'a newer version without a canonical value removes the reading from aggregates',
  async (t) => {
    const m = await createMeter(s, a.token, { meter_identifier: 'to-null', unit: 'kwh' })
    const at = Date.parse('2025-04-11T10:15:00Z')
    await insertReadings(s, a.workspaceId, [
      { meter: m.id, at, value: 4, version: 1 },
      { meter: m.id, at: at + 60_000, value: 1, version: 1 },
    ])
    await insertReadings(s, a.workspaceId, [
      {
        meter: m.id,
        at,
        value: 4,
        unit: 'm3',
        canonical: null,
        flags: ['unit_mismatch'],
        version: 2,
      },
    ])
    const r = await get({
      meter_id: m.id,
      aggregate: 'daily',
      from: '2025-04-11T00:00:00Z',
      to: '2025-04-11T23:59:59.999Z',
    })
    t.match(r.body.data, [{ reading_count: 1, sum: 1 }])
    const raw = await get({
      meter_id: m.id,
      from: '2025-04-11T00:00:00Z',
      to: '2025-04-11T23:59:59Z',
    })
    t.same(
      raw.body.data.map((x: any) => x.canonical_value),
      [null, 1],
    )
  },
)

t.test(
  'a reading whose rollup block a crash cut off is counted after the next start',
  async (t) => {
    const m = await createMeter(s, a.token, { meter_identifier: 'crash-1', unit: 'kwh' })
    const hour = Date.parse('2025-07-01T10:00:00Z')
    await insertReadings(
      s,
      a.workspaceId,
      [1, 2, 3].map((i) => ({ meter: m.id, at: hour + i * 60_000, value: i })),
    )
    // What kill -9 between the readings and their rollup rows leaves behind.
    await rollupCurrent(s.app.parts.store.sql)
    await s.app.parts.store.sql.exec(`DELETE FROM readings_hourly WHERE meter_id = {m:UInt64}`, {
      m: m.id,
    })
    const f = {
      ws: a.workspaceId,
      meterIds: [m.id],
      kind: null,
      from: hour,
      to: hour + 3_600_000 - 1,
    }
    const page = { limit: 10, offset: 0 }
    const lost = await aggregateReadings(s.app.parts.store.sql, f, 'hourly', null, page)
    t.equal(lost.rows.length, 0, 'the rollup alone misses the hour')
    t.ok((await markHoursMissedByACrash(s.app.parts.store.sql)) >= 1, 'the hour is marked')
    const after = await aggregateReadings(s.app.parts.store.sql, f, 'hourly', null, page)
    t.equal(after.dirtyHours, 1, 'read as dirty: recomputed from the raw readings')
    t.match(after.rows, [{ reading_count: 3, sum: 6 }])
    t.equal(
      await markHoursMissedByACrash(s.app.parts.store.sql),
      0,
      'marked once: the next start finds nothing',
    )
  },
)
