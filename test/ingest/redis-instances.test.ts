// Two ingest pipelines ("instances") sharing one store and one real redis-server race the
// same meters: every identity is created exactly once across both, per-meter turns never
// interleave, and when Redis loses its keys ClickHouse still has the final word.
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import type { CoordMeterLocks } from '../../src/actors/meter-locks.js'
import type { IngestPipeline } from '../../src/ingest/pipeline.js'
import type { HistoryLoader } from '../../src/store/history.js'
import { awayFromMinuteEdge } from '../helpers/minute.js'
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
  const { token, workspaceId } = await s.tenant()

  // The second instance: its own coordination client, meter index and actors; same store.
  const other = await secondInstance(s, redis.url)
  t.teardown(() => other.close())
  const store = s.app.parts.store
  const { ingest: second, history: history2, locks: locks2 } = other
  const first = s.app.parts.ingest
  const base = Date.now() - 86400_000
  const batch = (from: number, n: number, meters: number) =>
    Array.from({ length: n }, (_, i) => ({
      meter: `r-${(from + i) % meters}`,
      kind: 'saldo',
      value: from + i,
      unit: 'kwh',
      recorded_at: new Date(base + (from + i) * 60_000).toISOString(),
    }))
  const count = async () =>
    Number(
      (
        await store.sql.query<any>(
          `SELECT count() AS c FROM readings FINAL WHERE workspace_id = ${workspaceId}`,
        )
      )[0].c,
    )

  t.test('racing the same readings on two instances creates each exactly once', async (t) => {
    const items = batch(0, 200, 10)
    const [a, b] = await Promise.all([
      first.ingest({ workspaceId, items, source: 'report' }),
      second.ingest({ workspaceId, items, source: 'report' }),
    ])
    t.equal(a.accepted + b.accepted, 200, `created once overall (${a.accepted} + ${b.accepted})`)
    t.equal(a.duplicates + b.duplicates, 200)
    t.equal(await count(), 200)
    const ids = await store.sql.query<any>(
      `SELECT meter_identifier, count() AS c FROM meters FINAL WHERE workspace_id = ${workspaceId} GROUP BY meter_identifier HAVING c > 1`,
    )
    t.same(ids, [], 'no meter was created twice')
  })

  t.test('interleaved batches across instances keep per-meter results exact', async (t) => {
    const results = await Promise.all(
      [0, 1, 2, 3].map((k) =>
        (k % 2 ? first : second).ingest({
          workspaceId,
          items: batch(200 + (k >> 1) * 50, 50, 10),
          source: 'report',
        }),
      ),
    )
    const accepted = results.reduce((n, r) => n + r.accepted, 0)
    t.equal(accepted, 100)
    t.equal(await count(), 300)
  })

  t.test(
    'after Redis lost its keys, replays are still duplicates (ClickHouse decides)',
    async (t) => {
      await redis.restartEmpty()
      await new Promise((r) => setTimeout(r, 500))
      let out
      for (let i = 0; i < 20; i++) {
        try {
          out = await second.ingest({ workspaceId, items: batch(0, 300, 10), source: 'report' })
          break
        } catch {
          await new Promise((r) => setTimeout(r, 200)) // reconnecting
        }
      }
      t.ok(out)
      t.equal(out!.accepted, 0)
      t.equal(out!.duplicates, 300)
      const viaHttp = await s.call('POST', '/api/v1/reportData', {
        token,
        body: { readings: batch(0, 50, 10) },
      })
      t.equal(viaHttp.status, 200, viaHttp.text)
      t.equal(await count(), 300)
    },
  )

  // A meter taking turns on two instances, one reading at a time: a decrease, an
  // implausible jump and readings sent late. Each instance catches up on what the other
  // wrote: from the note the other left with the lease, else (no note: it expired or was
  // lost) from the store. Either way the flags are those of one sorted batch.
  const raw = new Redis(redis.url)
  t.teardown(() => raw.quit())
  /**
   * Both instances give back the meter leases they keep (each would keep one nobody asked
   * for up to its keep time), and they are back.
   */
  const leasesBack = async () => {
    const locks1 = s.app.parts.actors.env.locks as CoordMeterLocks
    await Promise.all([locks1.giveBackIdle(), locks2.giveBackIdle()])
    for (let i = 0; i < 200 && (await raw.keys('*lease:meter:*')).length; i++)
      await new Promise((r) => setTimeout(r, 5))
  }
  /** Once the leases are back, drops every note. */
  const dropNotes = async () => {
    await leasesBack()
    const notes = await raw.keys('*mnote:*')
    if (notes.length) await raw.del(...notes)
  }
  interface Instance {
    ingest: Pick<IngestPipeline, 'ingest'>
    history: HistoryLoader
  }
  const alternate = async (t: Test, name: string, [a, b]: Instance[], notes: boolean) => {
    const values = Array.from({ length: 24 }, (_, i) =>
      i === 6 ? 90 : i === 12 ? 50_000 : 100 + i * 2,
    )
    const order = [
      0, 1, 2, 3, 4, 5, 7, 8, 6, 9, 10, 11, 13, 14, 15, 12, 16, 17, 20, 21, 18, 19, 22, 23,
    ]
    const t0 = Date.now() - 3 * 3_600_000
    const item = (meter: string, i: number) => ({
      meter,
      kind: 'saldo',
      value: values[i]!,
      unit: 'kwh',
      recorded_at: new Date(t0 + i * 60_000).toISOString(),
    })
    const q = { a: { ...a!.history.queries }, b: { ...b!.history.queries } }
    for (const [k, i] of order.entries()) {
      if (!notes) await dropNotes()
      const out = await (k % 2 ? b! : a!).ingest.ingest({
        workspaceId,
        items: [item(name, i)],
        source: 'report',
      })
      t.equal(out.accepted, 1, `reading ${i} stored once`)
    }
    const sorted = await first.ingest({
      workspaceId,
      items: values.map((_, i) => item(`${name}-sorted`, i)),
      source: 'report',
    })
    t.equal(sorted.accepted, values.length)
    const { queries: qa } = a!.history
    const { queries: qb } = b!.history
    t.equal(
      qa.windows - q.a.windows,
      0,
      'the instance that created the meter never loaded its window',
    )
    t.equal(qb.windows - q.b.windows, 1, 'the other loaded it once')
    const fromStore = qa.changes - q.a.changes + qb.changes - q.b.changes
    if (notes)
      t.equal(
        fromStore,
        0,
        `then caught up from the notes on every turn (${fromStore} from the store)`,
      )
    else
      t.ok(
        fromStore >= order.length - 2,
        `then caught up from the store on every turn (${fromStore})`,
      )
    const flagsOf = async (meter: string) =>
      (
        await store.sql.query<{ at: string; flags: string[] }>(
          `SELECT toString(recorded_at) AS at, quality_flags AS flags FROM readings FINAL
           WHERE workspace_id = ${workspaceId} AND meter_id =
             (SELECT any(id) FROM meters FINAL WHERE workspace_id = ${workspaceId} AND meter_identifier = '${meter}')
           ORDER BY recorded_at`,
        )
      ).map((r) => ({ at: r.at, flags: [...r.flags].sort() }))
    const alt = await flagsOf(name)
    t.equal(alt.length, values.length, 'every reading stored')
    t.ok(
      alt.some((r) => r.flags.length > 0),
      `the series carries flags (${JSON.stringify(alt.map((r) => r.flags))})`,
    )
    t.same(
      alt,
      await flagsOf(`${name}-sorted`),
      'the same flags as the sorted batch on one instance',
    )
  }

  const pair = [
    { ingest: second, history: history2 },
    { ingest: first, history: s.app.parts.actors.env.history },
  ]
  t.test('a meter taking turns on both instances catches up from the notes left', (t) =>
    alternate(t, 'alt', pair, true),
  )
  t.test('and from the store where no note is left: the same flags', (t) =>
    alternate(t, 'alt-store', pair, false),
  )

  t.test('a meter that stays on one instance leaves no note', async (t) => {
    const item = (i: number) => ({
      meter: 'stays',
      kind: 'saldo',
      value: i,
      unit: 'kwh',
      recorded_at: new Date(base + i * 60_000).toISOString(),
    })
    // Its first hold, new to its actor, leaves one: dropped once the lease is back.
    t.equal((await first.ingest({ workspaceId, items: [item(0)], source: 'report' })).accepted, 1)
    await dropNotes()
    for (let i = 1; i < 4; i++) {
      t.equal((await first.ingest({ workspaceId, items: [item(i)], source: 'report' })).accepted, 1)
      await leasesBack()
    }
    t.same(await raw.keys('*mnote:*'), [], 'no note after its turns')
  })

  t.test('per-token rate limit is shared through Redis', async (t) => {
    const tenant = await s.tenant({ rateLimit: 3 })
    await awayFromMinuteEdge()
    const codes = []
    for (let i = 0; i < 4; i++)
      codes.push((await s.call('GET', '/api/v1/ping', { token: tenant.token })).status)
    t.same(codes, [200, 200, 200, 429])
  })
}
