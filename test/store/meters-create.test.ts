// MeterRepo.createMany: calls queued behind the workspace's creation lock are served in one
// turn — one id range, one INSERT — and each is answered exactly as if it had run alone.
import t from 'tap'
import { MemoryCoord } from '../../src/coord/memory.js'
import { newMeter } from '../../src/store/meter-row.js'
import { MeterRepo } from '../../src/store/meters.js'
import { openTmpStore } from '../helpers/store.js'

const tmp = await openTmpStore()
t.teardown(() => tmp.close())
const coord = new MemoryCoord()
const meters = new MeterRepo(tmp.store, coord)
await meters.init()
const list = (...ids: string[]) => ids.map((id) => newMeter(id))
const stored = (ws: number) =>
  tmp.store.sql.query<{ meter_identifier: string; id: string; version: string }>(
    'SELECT meter_identifier, id, version FROM meters FINAL WHERE workspace_id = {ws:UInt64} ORDER BY id',
    { ws },
  )

t.test(
  'calls made together: one INSERT, each new meter created by the first to name it',
  async (t) => {
    const all = await Promise.all([
      meters.createMany(1, list('a', 'b')),
      meters.createMany(1, list('b', 'c', 'c')),
      meters.createMany(1, list('a', 'd')),
    ])
    const shape = all.map((rs) =>
      rs.map((r) => ('meter' in r ? `${r.meter.meter_identifier}:${r.created}` : r.refused)),
    )
    t.same(shape, [
      ['a:true', 'b:true'],
      ['b:false', 'c:true', 'c:true'],
      ['a:false', 'd:true'],
    ])
    const rows = await stored(1)
    t.same(
      rows.map((r) => r.meter_identifier),
      ['a', 'b', 'c', 'd'],
      'ids in arrival order',
    )
    t.equal(new Set(rows.map((r) => r.version)).size, 1, 'written in one INSERT')
    const ids = all.flat().map((r) => ('meter' in r ? r.meter.id : 0))
    t.same(
      ids,
      [1, 2, 2, 3, 3, 1, 4].map((i) => Number(rows[i - 1]!.id)),
      'one meter per identifier',
    )
  },
)

t.test('admission runs per call in order and sees the meters admitted before it', async (t) => {
  // A plan limit of 3 operational meters, counted as the store would plus what is pending.
  const seen: { n: number; pending: number }[] = []
  const limit = (n: number, pending: number) => {
    seen.push({ n, pending })
    const allowed = Math.max(0, Math.min(n, 3 - pending))
    return Promise.resolve({
      allowed,
      refused: allowed < n ? ('rejected_plan_limit' as const) : null,
    })
  }
  const all = await Promise.all([
    meters.createMany(2, list('p', 'q'), limit),
    meters.createMany(2, list('q', 'r', 's'), limit),
    meters.createMany(2, list('t'), limit),
  ])
  t.same(seen, [
    { n: 2, pending: 0 },
    { n: 2, pending: 2 },
    { n: 1, pending: 3 },
  ])
  const shape = all.map((rs) =>
    rs.map((r) => ('meter' in r ? `${r.meter.meter_identifier}:${r.created}` : r.refused)),
  )
  t.same(shape, [
    ['p:true', 'q:true'],
    ['q:false', 'r:true', 'rejected_plan_limit'],
    ['rejected_plan_limit'],
  ])
  t.same(
    (await stored(2)).map((r) => r.meter_identifier),
    ['p', 'q', 'r'],
  )
})

t.test('an admission that throws fails its own call only', async (t) => {
  const boom = () => Promise.reject(new Error('coordination down'))
  const [ok, failed] = await Promise.allSettled([
    meters.createMany(3, list('x')),
    meters.createMany(3, list('y'), boom),
  ])
  t.equal(ok.status, 'fulfilled')
  t.equal(failed.status, 'rejected')
  t.same(
    (await stored(3)).map((r) => r.meter_identifier),
    ['x'],
  )
})

t.test('a call arriving while a turn runs is served in the next one', async (t) => {
  const first = meters.createMany(4, list('m1'))
  await new Promise((r) => setImmediate(r))
  const [a, b] = await Promise.all([first, meters.createMany(4, list('m1', 'm2'))])
  t.same(
    [...a, ...b].map((r) =>
      'meter' in r ? `${r.meter.meter_identifier}:${r.created}` : r.refused,
    ),
    ['m1:true', 'm1:false', 'm2:true'],
  )
})

t.test('after the lock could not be had, the next call gets a turn of its own', async (t) => {
  // Another holder keeps the lease past the wait (500 polls of 10 ms): the call times out.
  t.ok(await coord.lease('meter-create:5', 'another instance', 60_000))
  await t.rejects(meters.createMany(5, list('w1')), /meter creation lock/)
  await coord.release('meter-create:5', 'another instance')
  const [r] = await meters.createMany(5, list('w1'))
  t.ok(r && 'meter' in r && r.created, 'created once the lease is free')
})

t.test('a meter with every field set reads back as saved (rows are written by hand)', async (t) => {
  const [r] = await meters.createMany(7, [
    newMeter('every "field" \\ ü', { name: 'Ke"ller', unit: 'kwh', profile_needs_review: false }),
  ])
  const made = (r as { meter: import('../../src/store/meter-row.js').Meter }).meter
  const full = {
    ...made,
    display_unit: 'mwh',
    group_id: 42,
    rollover_max: 99999.5,
    expected_interval_minutes: 15,
    pulse_weight: 0.001,
    pulse_unit: 'm3',
    profile_key: 'wmbus_oms',
    profile_version: 3,
    lifecycle_state: 'inactive' as const,
    lifecycle_changed_at: '2030-01-02T03:04:05.678Z',
    wmbus_key: '00112233445566778899aabbccddeeff',
  }
  await meters.save(full)
  // A repository of its own reads the rows anew.
  const fresh = new MeterRepo(tmp.store, new MemoryCoord())
  await fresh.init()
  t.same(await fresh.byId(7, made.id), full, 'every field as saved')
  const nulls = { ...full, name: null, unit: null, group_id: null, lifecycle_changed_at: null }
  await meters.save(nulls)
  const again = new MeterRepo(tmp.store, new MemoryCoord())
  await again.init()
  t.same(await again.byId(7, made.id), nulls, 'nulls as saved')
})

t.test('a failed INSERT fails only the calls naming its meters', async (t) => {
  // Last in this file: the table goes, so the INSERT fails in the store itself.
  await tmp.store.sql.exec('DROP TABLE meters')
  const [known, fresh] = await Promise.allSettled([
    meters.createMany(4, list('m1')),
    meters.createMany(4, list('m1', 'm9')),
  ])
  t.equal(known.status, 'fulfilled', 'm1 exists: answered from the index')
  if (known.status === 'fulfilled')
    t.same(
      known.value.map((r) => 'meter' in r && r.created),
      [false],
    )
  t.equal(fresh.status, 'rejected', 'm9 was not stored')
  t.equal(await meters.byIdentifier(4, 'm9'), null, 'nor indexed')
})
