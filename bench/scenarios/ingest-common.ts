// Shared by the ingest scenarios: a Meterflow server with a bench tenant, the measured
// closed- and open-loop runs, and the time bases that keep every run's readings new.
import type { Ctx } from '../lib/context.js'
import { LoadGen, type LoadConfig, type Measured } from '../lib/loadgen.js'
import { benchTenant, startServer, type BenchServer } from '../lib/server.js'
import type { BodySpec } from '../lib/bodies.js'

/** lanes (each its own meters); closed-loop concurrency never exceeds it */
/** meters per lane: 200 (quick 100, tiny 50, so the provisioning pass stays short) */
export const metersFor = (ctx: { tiny: boolean; quick: boolean }) =>
  ctx.tiny ? 50 : ctx.quick ? 100 : 200
export const lanesFor = (ctx: { tiny: boolean; quick: boolean }) =>
  ctx.tiny ? 4 : ctx.quick ? 8 : 16
export const STEP_MS = 60_000
const DAY = 86_400_000

export interface IngestEnv {
  server: BenchServer
  gen: LoadGen
  token: string
  ws: number
  lanes: number
  meters: number
  /** a fresh, later time base for each measured run (readings stay appends per meter) */
  nextStart(): number
  close(): Promise<void>
}

/** `env`: the server's environment over the bench's (bench/lib/server.ts). */
export async function ingestEnv(
  ctx: Ctx,
  name: string,
  env?: Record<string, string>,
): Promise<IngestEnv> {
  const server = await startServer({
    name,
    env,
    redisUrl: ctx.redisUrl,
    clickhouseUrl: ctx.clickhouseUrl,
    profile: ctx.profile,
  })
  const gen = new LoadGen()
  const { ws, token } = await benchTenant(server)
  // 300 days back leaves room for ~100 runs of 2 days each before "now".
  let start = Date.now() - 300 * DAY
  return {
    server,
    gen,
    token,
    ws,
    lanes: lanesFor(ctx),
    meters: metersFor(ctx),
    nextStart: () => (start += 2 * DAY),
    async close() {
      gen.close()
      await server.stop()
    },
  }
}

export function loadConfig(
  env: IngestEnv,
  ctx: Ctx,
  path: string,
  body: BodySpec,
  o: Partial<LoadConfig>,
): LoadConfig {
  return {
    host: env.server.host,
    port: env.server.port,
    path,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${env.token}` },
    mode: 'closed',
    connections: 4,
    lanes: env.lanes,
    warmupMs: ctx.warmupMs,
    durationMs: ctx.durationMs,
    body,
    ...o,
  }
}

export async function measure(
  env: IngestEnv,
  cfg: LoadConfig,
): Promise<{ m: Measured; insertMean: number; inserts: number; insertBusy: number }> {
  await env.server.insertStats() // reset the probe's counters
  const m = await env.gen.run(cfg, env.server.cpuMs, env.server.threadCpuMs)
  const st = await env.server.insertStats()
  return {
    m,
    insertMean: st.inserts ? st.rows / st.inserts : 0,
    inserts: st.inserts,
    // share of warm-up and window with a readings INSERT running (the writer runs one at a time)
    insertBusy: st.ms / (cfg.warmupMs + cfg.durationMs),
  }
}
