// Scale-out: two Meterflow instances of one deployment (one ClickHouse server, one Redis),
// the load generator's 8 connections alternating between them, against one instance of
// the same deployment alone. The deployment profiles (deployment.ts) run on both: gateway
// (disjoint meters: the instances never want the same meter at once) and shared (every
// request names the same 500 meters, so the two instances contend for every meter's lease
// in every request, and readings arrive late per meter), also with 10 % late by 3 hours.
// A row's ratio is the two instances' rate to the one instance's of the same profile, in
// this run. On this machine's 2 cores the two instances cannot be faster than one: the
// ratio shows what coordination across instances costs, and whether it collapses.
//
// Needs redis-server (skipped with a notice where it is missing); the ClickHouse server is
// `meterflow clickhouse-server`, started here unless the run has one (`--clickhouse`).
import crypto from 'node:crypto'
import os from 'node:os'
import { redisAvailable, startRedis } from '../../test/helpers/redis.js'
import { startClickHouse } from '../../test/helpers/clickhouse.js'
import { genericMeter, sharedMeter } from '../lib/bodies.js'
import type { Ctx } from '../lib/context.js'
import { LoadGen, type LoadConfig } from '../lib/loadgen.js'
import { fromLoad, round, withRatio, type Row, type ScenarioResult } from '../lib/report.js'
import { benchTenant, startServer, type BenchServer } from '../lib/server.js'
import { closed, PROFILES, provisionMeters, quiesce } from './deployment.js'

const C = 8
const KEYS = ['gateway 500', 'shared 500', 'shared 500, 10 % late by 3 h'] as const
const DAY = 86_400_000
/** Warm-up before each two-instance row's window. */
const WARM_MS = 2_000

export async function scaleout(ctx: Ctx): Promise<ScenarioResult> {
  if (!ctx.redisUrl && !redisAvailable())
    return {
      name: 'scaleout',
      rows: [],
      notes: ['SKIPPED: needs redis-server (apt-get install redis-server)'],
    }
  const redis = ctx.redisUrl ? null : await startRedis()
  const ch = ctx.clickhouseUrl ? null : await startClickHouse()
  const redisUrl = ctx.redisUrl ?? redis!.url
  const clickhouseUrl = ctx.clickhouseUrl ?? ch!.url
  const database = `bench_scaleout_${Date.now()}`
  // One admin token for the deployment, as its operators would set it.
  const adminToken = crypto.randomBytes(24).toString('hex')
  const instance = (name: string) =>
    startServer({
      name,
      redisUrl,
      clickhouseUrl,
      clickhouseDatabase: database,
      profile: ctx.profile,
      env: { ADMIN_TOKEN: adminToken },
    })
  const servers: BenchServer[] = []
  const gen = new LoadGen()
  const rows: Row[] = []
  const notes: string[] = []
  try {
    servers.push(await instance('scaleout-a'))
    const a = servers[0]!
    const { token } = await benchTenant(a)
    await provision(a, token)
    let start = Date.now() - 300 * DAY
    const one = new Map<string, number>()
    for (const n of [1, 2]) {
      if (n === 2) servers.push(await instance('scaleout-b'))
      const targets = servers.map((s) => ({ host: s.host, port: s.port }))
      for (const key of KEYS) {
        for (const s of servers) await quiesce(s.pid)
        const cfg: LoadConfig = {
          ...closed(a.host, a.port, token, ctx, PROFILES[key]!((start += 2 * DAY), '')),
          targets,
          // The second instance's first contact with the meters (their windows loaded, its
          // code compiled) is not what the rows measure: at least WARM_MS before each window.
          warmupMs: Math.max(ctx.warmupMs, n === 2 ? WARM_MS : 0),
        }
        // CPU of every instance (threads: the first one's alone, for its main-thread figure).
        const m = await gen.run(
          cfg,
          () => servers.reduce((t, s) => t + s.cpuMs(), 0),
          n === 1 ? a.threadCpuMs : undefined,
        )
        const label = `${key}, ${n === 1 ? 'one instance' : 'two instances'}, closed c=${C}`
        let row = fromLoad('scaleout', label, m, Math.max(...servers.map((s) => s.peakRssMiB())))
        row.detail = { ...row.detail, instances: n, load1: round(os.loadavg()[0]!, 2) }
        if (n === 1) one.set(key, row.rate)
        else row = withRatio(row, `one instance, ${key}`, one.get(key))
        rows.push(row)
        const bad = Object.entries(m.statuses).filter(([s]) => s !== '200' && s !== '201')
        if (bad.length || m.duplicates)
          notes.push(
            `${label}: ${m.duplicates} readings answered duplicate, statuses ${JSON.stringify(m.statuses)} (every reading sent is new)`,
          )
      }
    }
  } finally {
    gen.close()
    for (const s of servers) await s.stop()
    await ch?.stop()
    await redis?.stop()
  }
  notes.push(
    `two instances of one deployment (Redis ${ctx.redisUrl ? 'given' : 'started here'}, ClickHouse server ${ctx.clickhouseUrl ? 'given' : 'started here'}), connections alternating between them, each two-instance row after ${WARM_MS / 1000} s of warm-up; ratio = two instances' rate / one instance's of the same profile in this run. CPU ms/1k counts both instances, not redis-server or the ClickHouse server.`,
  )
  return { name: 'scaleout', rows, notes }
}

/** The profiles' meters, created through the first instance before anything is measured. */
function provision(s: BenchServer, token: string): Promise<void> {
  return provisionMeters(s, token, Date.now() - 301 * DAY, [
    ...Array.from({ length: C }, (_, lane) =>
      Array.from({ length: 500 }, (_, i) => genericMeter(lane, i)),
    ),
    Array.from({ length: 500 }, (_, i) => sharedMeter(i)),
  ])
}
