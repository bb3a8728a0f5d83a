// The actor registry's scheduling, with a store that only records writes: the meters of one
// request go into one batch of turns (one readings write), requests that arrive while a
// meter's turn runs share its next turn, and eviction drops the least recently used idle
// actors first.
import t from 'tap'
import type { ActorEnv } from '../../src/actors/actor-env.js'
import type { ActorReading } from '../../src/actors/actor-reading.js'
import { ActorRegistry, registryBounds } from '../../src/actors/registry.js'
import { newMeter, type Meter } from '../../src/store/meter-row.js'
import type { MeterHistory } from '../../src/store/history.js'

const T0 = Date.UTC(2026, 0, 1)

function env() {
  const writes: number[] = []
  /** Meters created here that no actor has used yet (MeterRepo.takeUnused). */
  const unused = new Set<number>()
  let release: (() => void) | null = null
  let hold = false
  let v = 0
  const e = {
    store: {
      version: () => ++v,
      versionAfter: (x: number | string) => Math.max(++v, Number(x) + 1),
      readings: {
        write: async (_body: string, rows: number) => {
          writes.push(rows)
          if (hold) await new Promise<void>((r) => (release = r))
        },
      },
      statusReports: { write: async () => {} },
      sql: {},
    },
    history: {},
    outbox: { emit: async () => {}, emitMany: async () => {} },
    locks: null,
    takeUnused: (id: number) => unused.delete(id),
    now: () => T0,
  } as unknown as ActorEnv
  return {
    env: e,
    writes,
    /** A meter as a request here has just created it: nothing of it is stored. */
    created: (id: number) => (unused.add(id), meter(id)),
    unused,
    hold: (on: boolean) => (hold = on),
    release: () => release?.(),
  }
}

const meter = (id: number): Meter => ({
  ...newMeter(`m-${id}`, { unit: 'kwh' }),
  id,
  workspace_id: 1,
  created_at: '2026-01-01 00:00:00.000',
})

const reading = (ref: number, minute: number): ActorReading => ({
  ref,
  kind: 'saldo',
  recordedAt: T0 + minute * 60_000,
  value: minute,
  unit: 'kwh',
  rawPayload: 'null',
  status: null,
})

t.test('the meters of one request are one batch: one readings write', async (t) => {
  const e = env()
  const reg = new ActorRegistry(e.env)
  const parts = Array.from({ length: 50 }, (_, i) => ({
    meter: e.created(i + 1),
    readings: [reading(i, 1)],
  }))
  const res = await reg.handleMany(parts)
  t.equal(res.length, 50)
  t.ok(res.every((r) => r.status === 'fulfilled'))
  t.ok(parts.every((p) => p.readings[0]!.verdict === 'created'))
  t.same(e.writes, [50], 'one write of 50 rows')
})

t.test('requests arriving during a turn share the next one', async (t) => {
  const e = env()
  const reg = new ActorRegistry(e.env)
  const m = e.created(1)
  e.hold(true)
  const first = reg.handle(m, [reading(0, 1)])
  await new Promise((r) => setImmediate(r))
  t.equal(reg.depth(), 1, 'one turn running')
  e.hold(false)
  const second = reg.handle(m, [reading(0, 2)])
  const third = reg.handle(m, [reading(0, 2), reading(1, 3)])
  t.equal(reg.depth(), 2, 'running + one waiting turn')
  e.release()
  const [a, b, c] = await Promise.all([first, second, third])
  t.same([...a], [[0, 'created']])
  t.same([...b], [[0, 'created']])
  t.same([...c].sort(), [
    [0, 'duplicate'],
    [1, 'created'],
  ])
  t.same(e.writes, [1, 2], 'the two waiting requests went as one turn, one write')
  t.equal(reg.depth(), 0)
})

t.test('eviction drops the least recently used idle actors', async (t) => {
  const e = env()
  const reg = new ActorRegistry(e.env, 10)
  for (let i = 1; i <= 10; i++) await reg.handle(e.created(i), [reading(0, 1)])
  // meter 1 is used again: now the most recent
  await reg.handle(meter(1), [reading(0, 2)])
  await reg.handle(e.created(11), [reading(0, 1)])
  t.equal(reg.size, 9, 'down to 90 %')
  t.equal(reg.evicted, 2, 'two evicted (counted for /metrics)')
  // Meter 1 kept its window: a repeat of its reading is a duplicate without the store
  // (the stub has no history to load: an evicted actor would fail here).
  const again = await reg.handle(meter(1), [reading(0, 2)])
  t.same([...again], [[0, 'duplicate']])
  const gone = await reg.handle(meter(2), [reading(0, 1)]).catch((e) => e)
  t.ok(gone instanceof Error, 'meter 2 (least recent) was evicted and reloads')
})

t.test('windows past the readings budget are evicted, least recently used first', async (t) => {
  const e = env()
  // 10 actors at most, 30 readings held at most; the budget is checked every 10 handles.
  const reg = new ActorRegistry(e.env, 10, 30)
  const five = (m: number) => Array.from({ length: 5 }, (_, k) => reading(k, m * 10 + k))
  for (let i = 1; i <= 9; i++) await reg.handle(e.created(i), five(i))
  t.equal(reg.size, 9, 'nine windows of 5: 45 readings held, not yet checked')
  // The 10th handle checks the budget: 45 > 30, so the oldest idle windows go until at most
  // 90 % of it (27) is held.
  await reg.handle(e.created(10), five(10))
  t.equal(reg.size, 6, 'meters 1-4 evicted: 25 readings held before meter 10 was added')
  t.equal(reg.held(), 30, 'held now: meters 5-10, five readings each')
  t.same(reg.bounds, { maxActors: 10, maxReadings: 30 })
  const kept = await reg.handle(meter(9), [reading(0, 90)])
  t.same([...kept], [[0, 'duplicate']], 'meter 9 (recent) kept its window: no store look-up')
  const gone = await reg.handle(meter(1), [reading(0, 10)]).catch((err) => err)
  t.ok(gone instanceof Error, 'meter 1 (oldest) was evicted and would reload from the store')
})

t.test('the bounds follow the heap: a fleet of 100,000 meters stays in memory', async (t) => {
  const GiB = 2 ** 30
  const b = registryBounds(4 * GiB)
  t.ok(b.maxActors >= 400_000 && b.maxActors <= 430_000, `4 GiB: ${b.maxActors} actors`)
  t.ok(b.maxReadings >= 16_000_000, `4 GiB: ${b.maxReadings} readings held`)
  // 100,000 meters reporting every 15 minutes hold 6 h (24) + 97 valid readings per kind.
  t.ok(b.maxReadings >= 100_000 * 121, 'their windows fit')
  const big = registryBounds(16 * GiB)
  t.ok(Math.abs(big.maxActors - 4 * b.maxActors) < 4, 'four times the heap, four times the actors')
  t.equal(big.maxReadings, 4 * b.maxReadings, 'and four times the readings')
  const tiny = registryBounds(64 * 2 ** 20)
  t.same(tiny, { maxActors: 6553, maxReadings: 262144 }, '64 MiB')
  t.same(registryBounds(0), { maxActors: 1_000, maxReadings: 100_000 }, 'never below a floor')
})

t.test('a failed write fails its requests, frees the actors, and the retry stores', async (t) => {
  const e = env()
  let broken = true
  const write = e.env.store.readings.write.bind(e.env.store.readings)
  e.env.store.readings.write = async (body: string, rows: number) => {
    if (broken) throw new Error('disk full')
    return write(body, rows)
  }
  const reg = new ActorRegistry(e.env)
  const parts = [1, 2, 3].map((id) => ({
    meter: e.created(id),
    readings: [reading(0, 1)],
  }))
  const res = await reg.handleMany(parts)
  t.ok(res.every((r) => r.status === 'rejected' && /disk full/.test(String(r.reason))))
  await new Promise((r) => setImmediate(r)) // the batch ends just after it answered
  t.equal(reg.depth(), 0, 'no actor left busy')
  broken = false
  // The failed turn's actors dropped their windows: the retry reloads them (the stub's
  // history answers with nothing stored) and creates the readings.
  e.env.history = {
    load: async () =>
      ({
        window: [],
        latest: { consumption: -Infinity, saldo: -Infinity },
        whole: { consumption: true, saldo: true },
        exchanges: [],
        status: null,
      }) satisfies MeterHistory,
  } as unknown as ActorEnv['history']
  const again = await reg.handleMany(parts)
  t.same(
    again.map((r, i) => (r.status === 'fulfilled' ? parts[i]!.readings[0]!.verdict : r.reason)),
    ['created', 'created', 'created'],
  )
  t.same(e.writes, [3], 'one write of the retried batch')
})

t.test(
  'a meter created here and unused: its first actor needs no history, whoever makes it',
  async (t) => {
    const e = env()
    const one = e.created(1)
    e.created(2)
    const reg = new ActorRegistry(e.env, 10)
    // Meters 1 and 2 were created here. The stub store has no history to load: asking it
    // would fail the turn.
    t.same([...(await reg.handle(one, [reading(0, 1)]))], [[0, 'created']])
    t.notOk(e.unused.has(1), 'taken by the first actor')
    // Meter 2's rows were rewritten apart from the actors (a backfill): it must load them.
    reg.forget(2)
    const rewritten = await reg.handle(meter(2), [reading(0, 1)]).catch((e) => e)
    t.ok(rewritten instanceof Error, 'a forgotten meter asks the store')
    // Meter 1's actor is evicted (least recently used); the next one asks the store.
    for (let i = 3; i <= 12; i++) await reg.handle(e.created(i), [reading(0, 1)])
    const evicted = await reg.handle(meter(1), [reading(0, 2)]).catch((e) => e)
    t.ok(evicted instanceof Error, 'only the first actor of a meter is spared the store')
  },
)
