// Deployment-scale ingest (issue 13): the naive ingest ceiling and the profiles real
// deployments send, each printed with its ratio to the naive ceiling measured in this run
// with the same bodies, the same 8 connections and the same load generator.
//   naive      uWS -> JSON.parse -> field checks -> ReplacingMergeTree INSERT (no actors,
//              no rollup, no flags): bench/lib/naive-ingest-server.ts
//   gateway    1 reading per meter per request, disjoint meters per connection, batch 500
//              and 1,000; closed c=8 and open at 50 % of that max (p99)
//   shared     the same 500 meters in every request of all 8 connections, time moving
//              forward, so requests overlap and readings arrive late per meter; and a run
//              where 10 % of the readings are 3 hours late
//   provision  first contact: 500 new meters per request (meters/s), disjoint per connection
//              and named by all 8 connections at once
//   fleet      the gateway profile over 40,000 meters: each connection names the next 500
//              of its 5,000 per request, so a meter reports every 10th request of its
//              connection (every 15 minutes of its own time), as a large deployment's do;
//              and over 320,000, a meter in every 80th request: 320,000 actors in memory
//              and, with Redis, as many leases kept (METER_LEASE_KEEP_S; a meter back after
//              its lease went costs a lease cycle: pipeline-cost.ts --keep-s 5)
import os from 'node:os'
import type { BodySpec } from '../lib/bodies.js'
import { fleetMeter, genericMeter, sharedMeter } from '../lib/bodies.js'
import { startChildServer } from '../lib/child-server.js'
import { drainAfterRow, eventSink } from '../lib/event-sink.js'
import type { Ctx } from '../lib/context.js'
import type { BenchServer } from '../lib/server.js'
import { LoadGen, type LoadConfig } from '../lib/loadgen.js'
import { cpuMs, peakRssMiB, threadCpuMs } from '../lib/proc.js'
import { fromLoad, round, withRatio, type Row, type ScenarioResult } from '../lib/report.js'
import { ingestEnv, loadConfig, measure, STEP_MS, type IngestEnv } from './ingest-common.js'

const C = 8
const HOUR = 3_600_000
const GATEWAY_BATCHES = [500, 1000]
const SHARED_BATCH = 500
const PROVISION_BATCH = 500
/** Meters per connection in the fleet profiles (8 × 5,000 = 40,000; 8 × 40,000 = 320,000). */
const FLEET_METERS = [5_000, 40_000]
/** Readings per request of the provisioning pass (MAX_BATCH_ITEMS is 10,000). */
const PASS_BATCH = 10_000

/** The body of each profile; `start` keeps every run's readings new. */
export const PROFILES: Record<string, (start: number, tag: string) => BodySpec> = {
  'gateway 500': (start) => ({
    kind: 'generic',
    batch: 500,
    meters: 500,
    startMs: start,
    stepMs: STEP_MS,
  }),
  'gateway 1000': (start) => ({
    kind: 'generic',
    batch: 1000,
    meters: 1000,
    startMs: start,
    stepMs: STEP_MS,
  }),
  'shared 500': (start) => ({
    kind: 'shared',
    batch: SHARED_BATCH,
    lanes: C,
    startMs: start,
    stepMs: STEP_MS,
  }),
  'shared 500, 10 % late by 3 h': (start) => ({
    kind: 'shared',
    batch: SHARED_BATCH,
    lanes: C,
    startMs: start,
    stepMs: STEP_MS,
    lateEvery: 10,
    lateMs: 3 * HOUR,
  }),
  ...Object.fromEntries(
    FLEET_METERS.map((meters) => [
      `fleet ${C * meters}`,
      (start: number): BodySpec => ({
        kind: 'fleet',
        batch: 500,
        meters,
        startMs: start,
        stepMs: 15 * 60_000,
      }),
    ]),
  ),
  'new meters 500': (start, tag) => ({
    kind: 'newMeters',
    batch: PROVISION_BATCH,
    prefix: `n${tag}-`,
    shared: false,
    atMs: start,
  }),
  'new meters 500, same in all 8 requests': (start, tag) => ({
    kind: 'newMeters',
    batch: PROVISION_BATCH,
    prefix: `m${tag}-`,
    shared: true,
    atMs: start,
  }),
}

const load1 = () => round(os.loadavg()[0]!, 2)

export function closed(
  host: string,
  port: number,
  token: string,
  ctx: Ctx,
  body: BodySpec,
): LoadConfig {
  return {
    host,
    port,
    path: '/api/v1/reportData',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    mode: 'closed',
    connections: C,
    lanes: C,
    warmupMs: ctx.warmupMs,
    durationMs: ctx.durationMs,
    body,
  }
}

/** The closed loop of profile `key` against the Meterflow server of `env`. */
const closedRun = (env: IngestEnv, ctx: Ctx, key: string, tag = '') =>
  closed(env.server.host, env.server.port, env.token, ctx, PROFILES[key]!(env.nextStart(), tag))

const startNaive = () => startChildServer('bench/lib/naive-ingest-server.ts')

/** Scenario: the naive ingest ceiling for every profile's bodies (run before the others). */
export async function naive(ctx: Ctx): Promise<ScenarioResult> {
  const rows: Row[] = []
  const srv = await startNaive()
  const gen = new LoadGen()
  let start = Date.now() - 300 * 86_400_000
  try {
    for (const [key, spec] of Object.entries(PROFILES)) {
      const settleMs = await quiesce(srv.child.pid!)
      const m = await gen.run(
        closed('127.0.0.1', srv.port, 'x', ctx, spec((start += 2 * 86_400_000), 'naive')),
        () => cpuMs(srv.child.pid!),
        () => threadCpuMs(srv.child.pid!),
      )
      const row = fromLoad('naive', `${key}, closed c=${C}`, m, peakRssMiB(srv.child.pid!))
      row.detail = { ...row.detail, load1: load1(), settleMs }
      rows.push(row)
      ctx.shared.naive.set(key, row.rate)
    }
  } finally {
    gen.close()
    await srv.stop()
  }
  return {
    name: 'naive',
    rows,
    notes: [
      'naive ingest: uWS, JSON.parse, field checks, one group-commit INSERT of minimal rows into a ReplacingMergeTree with the readings sort key; answered after the INSERT. Every reading counts (no idempotency).',
    ],
  }
}

function ratio(ctx: Ctx, row: Row, key: string): Row {
  return withRatio(row, `naive ${key}`, ctx.shared.naive.get(key))
}

/** One request per lane naming every meter once (not measured in the rows). */
async function provisionPass(
  env: IngestEnv,
  names: string[][],
): Promise<{ meters: number; ms: number }> {
  const t0 = performance.now()
  await provisionMeters(env.server, env.token, env.nextStart(), names)
  return { meters: names.reduce((n, l) => n + l.length, 0), ms: performance.now() - t0 }
}

/** A request per list of meter names, one reading each at `atMs`, all at once. */
export async function provisionMeters(
  server: BenchServer,
  token: string,
  atMs: number,
  names: string[][],
): Promise<void> {
  const at = new Date(atMs).toISOString()
  await Promise.all(
    names.map(async (list) => {
      const readings = list.map((meter) => ({
        meter,
        kind: 'saldo',
        value: 0,
        unit: 'kwh',
        recorded_at: at,
      }))
      const r = await server.call('POST', '/api/v1/reportData', token, { readings })
      if (r.status !== 201)
        throw new Error(`provisioning → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
    }),
  )
}

async function run(
  env: IngestEnv,
  ctx: Ctx,
  scenario: string,
  key: string,
  label: string,
  cfg: LoadConfig,
): Promise<Row> {
  const settleMs = await quiesce(env.server.pid)
  const { m, insertMean, inserts, insertBusy } = await measure(env, cfg)
  const row = ratio(ctx, fromLoad(scenario, label, m, env.server.peakRssMiB()), key)
  row.detail = {
    ...row.detail,
    insertMeanRows: round(insertMean),
    inserts,
    insertBusyPct: round(insertBusy * 100),
    load1: load1(),
    settleMs,
  }
  return row
}

/**
 * Waits until the server process has used under a tenth of a core for half a second (at
 * most 30 s): chDB's merges of the previous row's parts, or a delivery backlog, run after
 * that row's window ends and would otherwise be charged to the next row (an open-loop row
 * after a closed-loop one paid for its merges). Returns how long it took (a row's `settleMs`).
 */
export async function quiesce(pid: number): Promise<number> {
  const t0 = performance.now()
  let quiet = 0
  let last = cpuMs(pid)
  while (quiet < 2 && performance.now() - t0 < 30_000) {
    await new Promise((r) => setTimeout(r, 250))
    const now = cpuMs(pid)
    quiet = now - last < 25 ? quiet + 1 : 0
    last = now
  }
  return round(performance.now() - t0)
}

export async function gateway(ctx: Ctx): Promise<ScenarioResult> {
  const rows: Row[] = []
  const notes: string[] = []
  const env = await ingestEnv(ctx, 'gateway')
  try {
    const max = Math.max(...GATEWAY_BATCHES)
    const p = await provisionPass(
      env,
      Array.from({ length: C }, (_, lane) =>
        Array.from({ length: max }, (_, i) => genericMeter(lane, i)),
      ),
    )
    notes.push(
      `provisioning pass: ${p.meters} meters in ${round(p.ms)} ms (${round(p.meters / (p.ms / 1000))} meters/s)`,
    )
    for (const batch of GATEWAY_BATCHES) {
      const key = `gateway ${batch}`
      const c = closedRun(env, ctx, key)
      const best = await run(env, ctx, 'gateway', key, `batch ${batch}, closed c=${C}`, c)
      rows.push(best)
      const rate = (best.rate * 0.5) / batch
      if (rate > 0) {
        const o = loadConfig(env, ctx, '/api/v1/reportData', PROFILES[key]!(env.nextStart(), ''), {
          mode: 'open',
          rate,
          connections: C,
          lanes: C,
          maxConnections: 256,
        })
        rows.push(
          await run(
            env,
            ctx,
            'gateway',
            key,
            `batch ${batch}, open 50 % of max (${round(rate, 1)} req/s)`,
            o,
          ),
        )
      }
    }
  } finally {
    await env.close()
  }
  return { name: 'gateway', rows, notes }
}

export async function shared(ctx: Ctx): Promise<ScenarioResult> {
  const rows: Row[] = []
  const notes: string[] = []
  const env = await ingestEnv(ctx, 'shared')
  try {
    await provisionPass(env, [Array.from({ length: SHARED_BATCH }, (_, i) => sharedMeter(i))])
    for (const key of ['shared 500', 'shared 500, 10 % late by 3 h']) {
      const c = closedRun(env, ctx, key)
      rows.push(await run(env, ctx, 'shared', key, `${key}, closed c=${C}`, c))
    }
  } finally {
    await env.close()
  }
  notes.push('shared: every request names the same 500 meters; rate = readings answered created.')
  return { name: 'shared', rows, notes }
}

/**
 * The gateway profile over more meters than one request names: each fleet's meters created
 * first (not measured; the larger fleet's after the smaller one's row, which runs with its
 * own meters only), then each request names the next 500 of its connection's. Every
 * meter's actor and window must stay in memory for this to read like the gateway rows; one
 * that is evicted loads its window from the store again on its next reading.
 */
export async function fleet(ctx: Ctx): Promise<ScenarioResult> {
  const env = await ingestEnv(ctx, 'fleet')
  const rows: Row[] = []
  const notes: string[] = []
  try {
    let made = 0
    for (const perLane of FLEET_METERS) {
      const lists: string[][] = []
      for (let lane = 0; lane < C; lane++)
        for (let from = made; from < perLane; from += PASS_BATCH)
          lists.push(
            Array.from({ length: Math.min(PASS_BATCH, perLane - from) }, (_, i) =>
              fleetMeter(lane, from + i),
            ),
          )
      const p = await provisionPass(env, lists)
      made = perLane
      const key = `fleet ${C * perLane}`
      const every = perLane / 500
      const label = `${(C * perLane).toLocaleString('en')} meters, batch 500 (a meter in every ${every}th request), closed c=${C}`
      rows.push(await run(env, ctx, 'fleet', key, label, closedRun(env, ctx, key)))
      notes.push(
        `${key}: provisioning pass of ${p.meters} meters in ${round(p.ms)} ms (not measured); rate = readings answered created.`,
      )
    }
    return { name: 'fleet', rows, notes }
  } finally {
    await env.close()
  }
}

export async function provision(ctx: Ctx): Promise<ScenarioResult> {
  const rows: Row[] = []
  const env = await ingestEnv(ctx, 'provision')
  const sink = await eventSink()
  const notes: string[] = []
  try {
    await env.server.admin('POST', `/workspaces/${env.ws}/event-subscriptions`, {
      url: sink.url,
      events: ['meter.created'],
    })
    let n = 0
    for (const key of ['new meters 500', 'new meters 500, same in all 8 requests']) {
      const c = closedRun(env, ctx, key, String(n++))
      const row = await run(env, ctx, 'provision', key, `${key}, closed c=${C}`, c)
      rows.push(row)
      notes.push(await drainAfterRow(env.server, sink, `provision, ${key}`))
    }
  } finally {
    sink.close()
    await env.close()
  }
  return {
    name: 'provision',
    rows,
    notes: [
      'provision: rate = readings answered created = new meters per second (each new meter has exactly one reading; with the same meters in all 8 requests the other 7 are duplicates).',
      ...notes,
    ],
  }
}
