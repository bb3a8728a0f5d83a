// Quality flags end to end: a late reading re-checks its neighbours (changed rows become a
// new version), and the same readings give the same flags whatever the batching and
// arrival order (property test over real HTTP and chDB).
import fc from 'fast-check'
import t from 'tap'
import { dealer, drawnReadings, itemsOf, sortedItems } from '../helpers/dealt-readings.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const base = Date.now() - 10 * 86400_000
const at = (min: number) => new Date(base + min * 60_000).toISOString()
const sql = s.app.parts.store.sql

async function flagsOf(ws: number, meter: string): Promise<Record<string, string[]>> {
  const m = (await s.app.parts.meters.byIdentifier(ws, meter))!
  const rows = await sql.query<any>(
    `SELECT kind, recorded_at, quality_flags FROM readings FINAL WHERE meter_id = ${m.id} ORDER BY kind, recorded_at`,
  )
  return Object.fromEntries(rows.map((r) => [`${r.kind}@${r.recorded_at}`, r.quality_flags]))
}

t.test(
  'saldo_decrease, rollover_wrap, negative_consumption, and a late reading re-flags its neighbour',
  async (t) => {
    const { token, workspaceId } = await s.tenant()
    const send = (readings: unknown[]) =>
      s.call('POST', '/api/v1/reportData', { token, body: { readings } })
    await send([
      { meter: 'q', kind: 'saldo', value: 10, unit: 'kwh', recorded_at: at(0) },
      { meter: 'q', kind: 'saldo', value: 5, unit: 'kwh', recorded_at: at(30) },
      { meter: 'q', kind: 'consumption', value: -1, unit: 'kwh', recorded_at: at(30) },
    ])
    let f = await flagsOf(workspaceId, 'q')
    t.same(Object.values(f), [['negative_consumption'], [], ['saldo_decrease']])
    // Late reading between: 3 at t15 → t15 is the decrease now, t30 (5 >= 3) is clean again.
    const r = await send([
      { meter: 'q', kind: 'saldo', value: 3, unit: 'kwh', recorded_at: at(15) },
    ])
    t.equal(r.status, 201)
    f = await flagsOf(workspaceId, 'q')
    t.same(Object.values(f), [['negative_consumption'], [], ['saldo_decrease'], []])
    const m = (await s.app.parts.meters.byIdentifier(workspaceId, 'q'))!
    const [v] = await sql.query<any>(
      `SELECT count() AS c FROM readings WHERE meter_id = ${m.id} AND kind = 'saldo' AND recorded_at = '${at(30).replace('T', ' ').replace('Z', '')}'`,
    )
    t.ok(
      Number(v.c) >= 1,
      'the re-flagged neighbour was stored as a new version (or merged already)',
    )
    // Rollover: meter wraps at 100.
    await s.app.parts.meters.save({ ...m, rollover_max: 100 })
    await send([
      { meter: 'q', kind: 'saldo', value: 98, unit: 'kwh', recorded_at: at(60) },
      { meter: 'q', kind: 'saldo', value: 2, unit: 'kwh', recorded_at: at(75) },
    ])
    f = await flagsOf(workspaceId, 'q')
    t.same(Object.values(f).slice(-1), [['rollover_wrap']])
  },
)

t.test('meter_exchange on the first reading after a recorded exchange', async (t) => {
  const { token, workspaceId } = await s.tenant()
  const send = (readings: unknown[]) =>
    s.call('POST', '/api/v1/reportData', { token, body: { readings } })
  await send([{ meter: 'x', kind: 'saldo', value: 500, unit: 'kwh', recorded_at: at(0) }])
  const m = (await s.app.parts.meters.byIdentifier(workspaceId, 'x'))!
  await s.admin('POST', `/meters/${m.id}/exchanges`, {
    exchanged_at: at(10),
    old_final_value: 510,
    new_initial_value: 0,
  })
  await send([
    { meter: 'x', kind: 'saldo', value: 3, unit: 'kwh', recorded_at: at(20) },
    { meter: 'x', kind: 'saldo', value: 6, unit: 'kwh', recorded_at: at(30) },
  ])
  t.same(Object.values(await flagsOf(workspaceId, 'x')), [[], ['meter_exchange'], []])
})

t.test('property: same readings → same flags whatever batching and arrival order', async (t) => {
  const { token, workspaceId } = await s.tenant()
  let run = 0
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          kind: fc.constantFrom('saldo', 'consumption'),
          slot: fc.integer({ min: 0, max: 40 }),
          value: fc.integer({ min: -5, max: 60 }),
        }),
        { minLength: 1, maxLength: 40 },
      ),
      fc.integer({ min: 1, max: 7 }),
      fc.integer(),
      async (raw, batch, seed) => {
        run++
        const seen = new Set<string>()
        const items = raw
          .filter((r) => !seen.has(`${r.kind}${r.slot}`) && seen.add(`${r.kind}${r.slot}`))
          .map((r) => ({ kind: r.kind, value: r.value, unit: 'kwh', recorded_at: at(r.slot * 15) }))
        const a = `pa-${run}`
        const b = `pb-${run}`
        // A: one sorted batch. B: shuffled, in small batches.
        const sorted = [...items].sort((x, y) => x.recorded_at.localeCompare(y.recorded_at))
        await s.call('POST', '/api/v1/reportData', {
          token,
          body: { readings: sorted.map((i) => ({ ...i, meter: a })) },
        })
        const shuffled = [...items]
        let x = seed
        for (let i = shuffled.length - 1; i > 0; i--) {
          x = (x * 1103515245 + 12345) & 0x7fffffff
          const j = x % (i + 1)
          ;[shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!]
        }
        for (let i = 0; i < shuffled.length; i += batch)
          await s.call('POST', '/api/v1/reportData', {
            token,
            body: { readings: shuffled.slice(i, i + batch).map((it) => ({ ...it, meter: b })) },
          })
        t.same(await flagsOf(workspaceId, b), await flagsOf(workspaceId, a))
      },
    ),
    { numRuns: 25, seed: 42 },
  )
})

/**
 * Overlapping concurrent requests on the same meters (issue 13): several meters' readings
 * shuffled into requests that each carry several meters, sent in concurrent waves, so turns
 * of one meter race across requests and arrive late. Some runs shrink the actors' window to
 * the minimum, some forget actors between waves (their windows reload from the store), and
 * those runs read one row per kind on a reload, so that a reloaded window is short of the
 * meter's history (a whole one decides alone) and late readings take the batched store
 * look-ups. Flags must equal the same readings sent sorted in one batch.
 */
t.test('property: overlapping concurrent requests on the same meters → batch flags', async (t) => {
  const { token, workspaceId } = await s.tenant()
  const actors = s.app.parts.actors
  const history = actors.env.history as {
    queries?: Record<string, number>
    windowRows: number
  }
  const queries = history.queries
  const windowRows = history.windowRows
  const before = { ...queries }
  let run = 0
  const meters = 3
  await fc.assert(
    fc.asyncProperty(
      drawnReadings(meters, 120),
      fc.integer({ min: 2, max: 6 }),
      fc.integer({ min: 1, max: 4 }),
      fc.boolean(),
      fc.boolean(),
      fc.integer(),
      async (raw, requests, waves, small, forget, seed) => {
        run++
        actors.env.window = small ? { spanMs: 0, maxPerKind: 0 } : undefined
        // Reloaded windows short of the meters' whole history, as a long history's are.
        history.windowRows = small || forget ? 1 : windowRows
        const items = itemsOf(raw, at)
        const name = (set: string, m: number) => `o${set}-${run}-${m}`
        const sorted = sortedItems(items)
        const ref = await s.call('POST', '/api/v1/reportData', {
          token,
          body: { readings: sorted.map(({ m, ...i }) => ({ ...i, meter: name('a', m) })) },
        })
        t.equal(ref.status, 201)
        const { shuffle, deal } = dealer(seed)
        // Each wave: `requests` concurrent requests, readings dealt at random (meters mixed).
        const perWave = Math.ceil(items.length / waves)
        const shuffled = shuffle(items)
        for (let w = 0; w * perWave < shuffled.length; w++) {
          const wave = shuffled.slice(w * perWave, (w + 1) * perWave)
          const answers = await Promise.all(
            deal(wave, requests).map((b) =>
              s.call('POST', '/api/v1/reportData', {
                token,
                body: { readings: b.map(({ m, ...i }) => ({ ...i, meter: name('b', m) })) },
              }),
            ),
          )
          for (const a of answers) t.equal(a.status, 201)
          if (forget)
            for (let m = 0; m < meters; m++) {
              const meter = await s.app.parts.meters.byIdentifier(workspaceId, name('b', m))
              if (meter) actors.forget(meter.id)
            }
        }
        for (let m = 0; m < meters; m++)
          if (items.some((i) => i.m === m))
            t.same(
              await flagsOf(workspaceId, name('b', m)),
              await flagsOf(workspaceId, name('a', m)),
              `meter ${m} (run ${run})`,
            )
      },
    ),
    { numRuns: 20, seed: 13 },
  )
  actors.env.window = undefined
  history.windowRows = windowRows
  // The store paths ran (small windows, forgotten actors), batched across meters.
  t.ok(queries!.neighbourhood > before.neighbourhood!, 'late readings looked up in the store')
  t.ok(queries!.windows > before.windows!, 'forgotten actors reloaded their windows')
})
