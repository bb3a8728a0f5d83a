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
import type { HistoryLoader } from '../../src/store/history.js'
import { dealer, drawnReadings, itemsOf, sortedItems } from '../helpers/dealt-readings.js'
import { redisAvailable, REDIS_SKIP_NOTICE, startRedis } from '../helpers/redis.js'
import { secondInstance } from '../helpers/second-instance.js'
import { startTestServer } from '../helpers/server.js'

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
    const rows = await sql.query<{ kind: string; at: string; flags: string[] }>(
      `SELECT toString(kind) AS kind, toString(recorded_at) AS at, quality_flags AS flags
       FROM readings FINAL
       WHERE workspace_id = ${workspaceId} AND meter_id =
         (SELECT any(id) FROM meters FINAL
          WHERE workspace_id = ${workspaceId} AND meter_identifier = '${meter}')
       ORDER BY kind, recorded_at`,
    )
    return Object.fromEntries(rows.map((r) => [`${r.kind}@${r.at}`, [...r.flags].sort()]))
  }

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

          const { below: rnd, shuffle } = dealer(seed)
          const shuffled = shuffle(items)
          const perWave = Math.ceil(items.length / waves)
          let accepted = 0
          for (let w = 0; w * perWave < shuffled.length; w++) {
            const wave = shuffled.slice(w * perWave, (w + 1) * perWave)
            const resent = opts.again && w > 0 ? shuffled.slice(0, 1 + rnd(w * perWave)) : []
            const bodies: (typeof wave)[] = Array.from({ length: requests }, () => [])
            for (const it of [...wave, ...resent]) bodies[rnd(requests)]!.push(it)
            const answers = await Promise.all(
              bodies
                .filter((b) => b.length)
                .map((b) =>
                  instances[rnd(2)]!.ingest.ingest({
                    workspaceId,
                    items: b.map(({ m, ...i }) => ({ ...i, meter: name('b', m) })),
                    source: 'report',
                  }),
                ),
            )
            for (const a of answers) accepted += a.accepted
            t.same(
              answers.flatMap((a) =>
                a.results.filter((r) => r.status !== 'created' && r.status !== 'duplicate'),
              ),
              [],
              `wave ${w}: every reading stored or a duplicate`,
            )
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
}
