// Exact flags across two instances of one deployment (issue 13: "exact flags under any
// batching and order", "idempotency across instances"). Several meters' readings are dealt
// at random into concurrent requests, each sent to one of two ingest pipelines sharing the
// store and a real redis-server, in waves: the meters' leases change hands between and during
// the waves, and each instance catches up from the other's hand-over notes, from the store,
// or reloads. Some runs shrink both instances' windows, forget their actors between waves,
// give back their idle leases (a hand-over with a note), or send earlier readings again.
// Every reading must be stored once, and the flags must equal those of the same readings
// sent sorted in one batch.
import fc from 'fast-check'
import t from 'tap'
import type { CoordMeterLocks } from '../../src/actors/meter-locks.js'
import type { ActorRegistry } from '../../src/actors/registry.js'
import type { IngestPipeline } from '../../src/ingest/pipeline.js'
import type { IngestOutcome } from '../../src/ingest/types.js'
import type { HistoryLoader } from '../../src/store/history.js'
import { dealer, drawnReadings, itemsOf, sortedItems } from '../helpers/dealt-readings.js'
import { redisAvailable, REDIS_SKIP_NOTICE, startRedis } from '../helpers/redis.js'
import { secondInstance } from '../helpers/second-instance.js'
import { startTestServer } from '../helpers/server.js'
import { fullFrame } from '../helpers/wmbus.js'

if (!redisAvailable({ own: true })) {
  t.comment(REDIS_SKIP_NOTICE)
  console.warn(REDIS_SKIP_NOTICE)
  t.plan(0, REDIS_SKIP_NOTICE)
} else {
  const redis = await startRedis({ own: true })
  t.teardown(() => redis.stop())
  const s = await startTestServer({ REDIS_URL: redis.url })
  t.teardown(() => s.close())
  const other = await secondInstance(s, redis.url)
  t.teardown(() => other.close())
  // Each run provisions six meters: past the default hourly cap within a run or two.
  const { workspaceId } = await s.tenant({ workspace: { provision_cap_per_hour: 1_000_000 } })
  const sql = s.app.parts.store.sql
  // The reference of the telegram runs: one copy of each, sorted (its own workspace, where
  // the same telegrams are not repeats of the dealt ones).
  const refWs = (await s.tenant({ workspace: { provision_cap_per_hour: 1_000_000 } })).workspaceId

  interface Instance {
    ingest: Pick<IngestPipeline, 'ingest'>
    actors: ActorRegistry
    history: HistoryLoader
    locks: CoordMeterLocks
  }
  const instances: Instance[] = [
    {
      ingest: s.app.parts.ingest,
      actors: s.app.parts.actors,
      history: s.app.parts.actors.env.history as HistoryLoader,
      locks: s.app.parts.actors.env.locks as CoordMeterLocks,
    },
    other,
  ]
  const windowRows = instances.map((i) => i.history.windowRows)
  const queriesBefore = instances.map((i) => ({ ...i.history.queries }))

  const base = Date.now() - 10 * 86400_000
  const at = (min: number) => new Date(base + min * 60_000).toISOString()

  /** Per reading, its stored flags (sorted), by kind and time. */
  async function flagsOf(meter: string): Promise<Record<string, string[]>> {
    const rows = await storedOf(workspaceId, meter)
    return Object.fromEntries(rows.map((r) => [`${r.kind}@${r.at}`, r.flags]))
  }

  /** A meter's stored readings in time order, each with its flags (sorted). */
  async function storedOf(ws: number, meter: string) {
    const rows = await sql.query<{ kind: string; at: string; value: number; flags: string[] }>(
      `SELECT toString(kind) AS kind, toString(recorded_at) AS at, value, quality_flags AS flags
       FROM readings FINAL
       WHERE workspace_id = ${ws} AND meter_id =
         (SELECT any(id) FROM meters FINAL
          WHERE workspace_id = ${ws} AND meter_identifier = '${meter}' AND deleted = 0)
       ORDER BY kind, recorded_at`,
    )
    return rows.map((r) => ({ ...r, value: Number(r.value), flags: [...r.flags].sort() }))
  }

  /** The items of these answers that were neither stored nor a duplicate. */
  const neither = (answers: IngestOutcome[]) =>
    answers.flatMap((a) =>
      a.results.filter((r) => r.status !== 'created' && r.status !== 'duplicate'),
    )

  const meters = 3
  let run = 0
  let handedOver = 0
  t.test('two instances, overlapping requests on the same meters → batch flags', async (t) => {
    await fc.assert(
      fc.asyncProperty(
        drawnReadings(meters, 100),
        fc.integer({ min: 2, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        fc.record({
          small: fc.boolean(),
          forget: fc.boolean(),
          giveBack: fc.boolean(),
          again: fc.boolean(),
        }),
        fc.integer(),
        async (raw, requests, waves, opts, seed) => {
          run++
          for (const [n, i] of instances.entries()) {
            i.actors.env.window = opts.small ? { spanMs: 0, maxPerKind: 0 } : undefined
            // Reloaded windows short of the meters' whole history, as a long history's are.
            i.history.windowRows = opts.small || opts.forget ? 1 : windowRows[n]!
          }
          const items = itemsOf(raw, at)
          const name = (set: string, m: number) => `x${set}-${run}-${m}`
          const sorted = sortedItems(items)
          const ref = await instances[0]!.ingest.ingest({
            workspaceId,
            items: sorted.map(({ m, ...i }) => ({ ...i, meter: name('a', m) })),
            source: 'report',
          })
          t.equal(ref.accepted, items.length)

          const { below: rnd, shuffle, deal } = dealer(seed)
          const shuffled = shuffle(items)
          const perWave = Math.ceil(items.length / waves)
          let accepted = 0
          for (let w = 0; w * perWave < shuffled.length; w++) {
            const wave = shuffled.slice(w * perWave, (w + 1) * perWave)
            const resent = opts.again && w > 0 ? shuffled.slice(0, 1 + rnd(w * perWave)) : []
            const answers = await Promise.all(
              deal([...wave, ...resent], requests).map((b) =>
                instances[rnd(2)]!.ingest.ingest({
                  workspaceId,
                  items: b.map(({ m, ...i }) => ({ ...i, meter: name('b', m) })),
                  source: 'report',
                }),
              ),
            )
            for (const a of answers) accepted += a.accepted
            t.same(neither(answers), [], `wave ${w}: every reading stored or a duplicate`)
            t.equal(
              answers.reduce((n, a) => n + a.duplicates, 0),
              resent.length,
              `wave ${w}: the readings sent again are duplicates`,
            )
            if (opts.giveBack) {
              // One instance lets go of the meters it keeps: the other's next turn takes
              // them with the note left behind.
              await instances[rnd(2)]!.locks.giveBackIdle()
              handedOver++
            }
            if (opts.forget)
              for (const i of instances)
                for (let m = 0; m < meters; m++) {
                  const meter = await s.app.parts.meters.byIdentifier(workspaceId, name('b', m))
                  if (meter) i.actors.forget(meter.id)
                }
          }
          t.equal(accepted, items.length, `run ${run}: every reading stored once`)
          for (let m = 0; m < meters; m++)
            if (items.some((i) => i.m === m))
              t.same(
                await flagsOf(name('b', m)),
                await flagsOf(name('a', m)),
                `meter ${m} (run ${run})`,
              )
        },
      ),
      { numRuns: 20, seed: 7 },
    )
    for (const [n, i] of instances.entries()) {
      i.actors.env.window = undefined
      i.history.windowRows = windowRows[n]!
    }
    t.ok(handedOver > 0, 'leases were given back between waves')
    // Both instances took turns of the same meters, and caught up on each other's rows.
    const caughtUp = instances.reduce(
      (n, i, k) => n + (i.history.queries.changes - queriesBefore[k]!.changes!),
      0,
    )
    const loaded = instances.map((i, k) => i.history.queries.windows - queriesBefore[k]!.windows!)
    t.ok(
      loaded.every((l) => l > 0),
      `both instances loaded windows (${loaded.join(', ')})`,
    )
    t.comment(`catch-ups from the store: ${caughtUp}`)
  })

  // wM-Bus meters heard by several gateways, the copies dealt across both instances: each
  // radio telegram is stored once (the other copies are repeats, answered duplicate, in the
  // same request or another, on the same instance or the other), and the meters' stored
  // series and flags are those of one copy of each sent sorted.
  let tRun = 0
  let repeats = 0
  let flagged = 0
  t.test('two instances, telegrams heard by several gateways → each stored once', async (t) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            meter: fc.integer({ min: 0, max: meters - 1 }),
            slot: fc.integer({ min: 0, max: 60 }),
            // A meter's next reading: up by `step` litres, or down (saldo_decrease).
            step: fc.integer({ min: -40, max: 400 }),
            copies: fc.integer({ min: 1, max: 3 }),
          }),
          { minLength: 1, maxLength: 60 },
        ),
        fc.integer({ min: 2, max: 6 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer(),
        async (raw, requests, waves, seed) => {
          tRun++
          const idOf = (m: number) => 72_000_000 + tRun * 10 + m
          // Per meter, one reading per slot, litres a running sum; a repeated litres value
          // would be the same radio telegram again (a repeat), so such a reading is left out.
          const litres = new Map<number, number>()
          const used = new Set<string>()
          const readings: { m: number; slot: number; litres: number; copies: number }[] = []
          for (const r of [...raw].sort((a, b) => a.slot - b.slot)) {
            const l = (litres.get(r.meter) ?? 1_000) + r.step
            if (used.has(`${r.meter}:${r.slot}`) || used.has(`${r.meter}@${l}`)) continue
            used.add(`${r.meter}:${r.slot}`).add(`${r.meter}@${l}`)
            litres.set(r.meter, l)
            readings.push({ m: r.meter, slot: r.slot, litres: l, copies: r.copies })
          }
          // A gateway's copy is received `gw` seconds after the first one's.
          const item = (r: (typeof readings)[number], gw: number) => ({
            profile: 'wmbus_oms',
            payload: { telegram: fullFrame(idOf(r.m), r.litres) },
            recorded_at: new Date(Date.parse(at(r.slot * 15)) + gw * 1_000).toISOString(),
          })
          const ref = await instances[0]!.ingest.ingest({
            workspaceId: refWs,
            items: readings.map((r) => item(r, 0)),
            source: 'report',
          })
          t.equal(ref.accepted, readings.length)

          const { below: rnd, shuffle, deal } = dealer(seed)
          const copies = shuffle(
            readings.flatMap((r) => Array.from({ length: r.copies }, (_, gw) => item(r, gw))),
          )
          const perWave = Math.ceil(copies.length / waves)
          let created = 0
          for (let w = 0; w * perWave < copies.length; w++) {
            const answers = await Promise.all(
              deal(copies.slice(w * perWave, (w + 1) * perWave), requests).map((b) =>
                instances[rnd(2)]!.ingest.ingest({ workspaceId, items: b, source: 'report' }),
              ),
            )
            created += answers.reduce((n, a) => n + a.accepted, 0)
            repeats += answers.reduce((n, a) => n + a.duplicates, 0)
            t.same(neither(answers), [], `wave ${w}: every copy stored or a duplicate`)
          }
          t.equal(created, readings.length, `run ${tRun}: each telegram stored once`)
          for (let m = 0; m < meters; m++) {
            if (!readings.some((r) => r.m === m)) continue
            const id = String(idOf(m))
            const series = (rows: Awaited<ReturnType<typeof storedOf>>) =>
              rows.map((r) => ({ kind: r.kind, value: r.value, flags: r.flags }))
            const stored = series(await storedOf(workspaceId, id))
            flagged += stored.filter((r) => r.flags.length).length
            t.same(stored, series(await storedOf(refWs, id)), `meter ${m} (run ${tRun})`)
          }
        },
      ),
      { numRuns: 12, seed: 11 },
    )
    t.ok(repeats > 0, `copies answered as repeats (${repeats})`)
    t.ok(flagged > 0, `readings stored with flags (${flagged})`)
  })
}
