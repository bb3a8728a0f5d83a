// Meterflow bench harness: `npm run bench -- [--quick|--tiny] [--scenario NAME[,NAME]]
// [--runs N] [--json FILE] [--profile] [--redis] [--tmpfs]`. Each scenario runs in its own fresh DATA_DIR with the
// server and the load generator in separate processes; every throughput is printed next to
// the ceiling measured in this same run (shared, noisy machines). See bench/README.md.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { makeCtx, nearest, type Ctx } from './lib/context.js'
import { spreadDataDirs, type DataDirs } from './lib/data-dirs.js'
import { cpuModel } from './lib/proc.js'
import { round, table, withRatio, type ScenarioResult } from './lib/report.js'
import { spreads, spreadTable } from './lib/spread.js'
import { RESULTS_DIR, serverNodeFlags, serverRuntime } from './lib/server.js'
import { generic } from './scenarios/generic.js'
import { httpCeiling } from './scenarios/http-ceiling.js'
import { storageCeiling } from './scenarios/storage-ceiling.js'
import { telegram } from './scenarios/telegram.js'
import { webhook } from './scenarios/webhook.js'
import { decode, queries } from './scenarios/external.js'
import { fleet, gateway, naive, provision, shared } from './scenarios/deployment.js'
import { scaleout } from './scenarios/scaleout.js'

// Run order: ceilings the ingest scenarios compare with come first, except the storage
// ceiling, which is measured after ingest at the insert sizes the writer produced.
const SCENARIOS: Record<string, (ctx: Ctx) => Promise<ScenarioResult>> = {
  http: httpCeiling,
  generic,
  storage: storageCeiling,
  telegram,
  webhook,
  naive,
  gateway,
  shared,
  provision,
  fleet,
  scaleout,
  query: queries,
  decode,
}
const ALIASES: Record<string, string> = {
  'http-ceiling': 'http',
  'storage-ceiling': 'storage',
  queries: 'query',
  decoder: 'decode',
}

function usage(): never {
  console.log(
    `usage: npm run bench -- [--quick] [--tiny] [--scenario ${Object.keys(SCENARIOS).join('|')}[,...]] [--runs N] [--json FILE] [--profile] [--redis] [--clickhouse] [--src] [--tmpfs]`,
  )
  process.exit(2)
}

/**
 * Every data directory of the run (servers, ceilings; they all come from os.tmpdir(), which
 * child processes inherit through TMPDIR) on /dev/shm: the software apart from any disk
 * (bench/README.md, "The disk").
 */
function useTmpfs(): void {
  const shm = '/dev/shm'
  try {
    fs.accessSync(shm, fs.constants.W_OK)
  } catch {
    console.error(`--tmpfs: ${shm} is not writable here`)
    process.exit(2)
  }
  process.env.TMPDIR = shm
}

function parseArgs(argv: string[]) {
  const o = {
    quick: false,
    tiny: false,
    profile: false,
    redis: false,
    clickhouse: false,
    tmpfs: false,
    json: undefined as string | undefined,
    scenarios: [] as string[],
    runs: 1,
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--quick') o.quick = true
    else if (a === '--tiny') o.tiny = true
    else if (a === '--profile') o.profile = true
    else if (a === '--redis') o.redis = true
    else if (a === '--clickhouse') o.clickhouse = true
    else if (a === '--src') process.env.BENCH_RUNTIME = 'tsx'
    else if (a === '--tmpfs') o.tmpfs = true
    else if (a === '--json') o.json = argv[++i] ?? usage()
    else if (a === '--runs') {
      o.runs = Number(argv[++i])
      if (!Number.isInteger(o.runs) || o.runs < 1) usage()
    } else if (a === '--scenario') o.scenarios.push(...(argv[++i] ?? usage()).split(','))
    else if (a === '--help' || a === '-h') usage()
    else {
      console.error(`unknown argument ${a}`)
      usage()
    }
  }
  o.scenarios = o.scenarios.map((s) => ALIASES[s] ?? s)
  for (const s of o.scenarios)
    if (!SCENARIOS[s]) {
      console.error(`unknown scenario ${s}`)
      usage()
    }
  return o
}

/** The closed-loop row of the generic gateway profile at this batch size, if it ran. */
function gatewayClosed(results: ScenarioResult[], batch: number) {
  return results
    .find((r) => r.name === 'gateway')
    ?.rows.find((r) => r.label.startsWith(`batch ${batch}, closed`))
}

/** Ratios that need figures from several scenarios. */
function addRatios(ctx: Ctx, results: ScenarioResult[]): void {
  for (const r of results)
    r.rows = r.rows.map((row) => {
      const ins = row.detail?.insertMeanRows as number | undefined
      const batch = Number(/batch (\d+)/.exec(row.label)?.[1])
      if (row.scenario === 'telegram' && row.detail?.profile === 'gateway') {
        // Telegrams in the gateway profile: against the generic gateway row of the same batch
        // size (issue 13: ≥ 50 %), else the naive ceiling of that profile.
        const g = gatewayClosed(results, batch)
        if (g) return withRatio(row, `gateway batch ${batch}`, g.rate)
        return withRatio(row, `naive gateway ${batch}`, ctx.shared.naive.get(`gateway ${batch}`))
      }
      if (row.scenario === 'generic' || row.scenario === 'telegram') {
        // Storage ceiling at the insert size this very run's writer produced.
        const st = ins ? nearest(ctx.shared.storage, ins) : undefined
        if (st) return withRatio(row, `storage @${st.size} rows/INSERT`, st.rate)
        const http = batch ? ctx.shared.http.get(batch) : undefined
        return withRatio(row, `HTTP ceiling batch ${batch}`, http)
      }
      if (row.scenario === 'webhook') {
        const g = batch ? ctx.shared.generic.get(batch) : undefined
        if (g) return withRatio(row, `generic batch ${batch}`, g)
        const st = ins ? nearest(ctx.shared.storage, ins) : undefined
        return st ? withRatio(row, `storage @${st.size} rows/INSERT`, st.rate) : row
      }
      return row
    })
}

function verdicts(ctx: Ctx, results: ScenarioResult[]): string[] {
  const out: string[] = []
  const g = results.find((r) => r.name === 'generic')?.rows ?? []
  const best1k = g
    .filter((r) => /^batch 1000, closed/.test(r.label))
    .sort((a, b) => b.rate - a.rate)[0]
  if (best1k?.ratio !== undefined)
    out.push(
      `generic 1,000-reading batches at ${round(best1k.ratio * 100, 1)} % of the storage ceiling (target ≥ 80 %): ${best1k.ratio >= 0.8 ? 'MET' : 'MISSED'}`,
    )
  const half = g.find((r) => /^batch 1000, open 50 %/.test(r.label))
  if (half?.p99 !== undefined)
    out.push(
      `p99 of a 1,000-reading batch at half max throughput: ${round(half.p99, 1)} ms (target < 100 ms): ${half.p99 < 100 ? 'MET' : 'MISSED'}`,
    )
  const dec = results
    .find((r) => r.name === 'decode')
    ?.rows.find((r) => r.label.startsWith('plain WASM vs target'))
  if (dec?.ratio !== undefined)
    out.push(
      `plain telegram decode ${round(dec.rate / 1000, 1)} k/s per core (target ≥ 200 k/s): ${dec.ratio >= 1 ? 'MET' : 'MISSED'}`,
    )
  for (const row of results.find((r) => r.name === 'telegram')?.rows ?? []) {
    if (row.detail?.profile !== 'gateway' || !row.ceiling?.name.startsWith('gateway')) continue
    const naive = ctx.shared.naive.get(`gateway ${row.detail.batch}`)
    out.push(
      `telegram ${row.label} at ${round(row.ratio! * 100, 1)} % of generic gateway (target ≥ 50 %): ${row.ratio! >= 0.5 ? 'MET' : 'MISSED'}${naive ? `; ${round((row.rate / naive) * 100, 1)} % of naive` : ''}`,
    )
  }
  // First contact (issue 13): new meters per second through /reportData, generic items and
  // wM-Bus telegrams, disjoint and with the same new meters in every request.
  for (const r of results)
    for (const row of r.rows) {
      const what =
        r.name === 'provision'
          ? `provision ${row.label}`
          : row.detail?.profile === 'first-contact'
            ? `telegram ${row.label}`
            : null
      if (!what) continue
      out.push(
        `${what}: ${round(row.rate)} new meters/s (target ≥ 5,000/s): ${row.rate >= 5000 ? 'MET' : 'MISSED'}`,
      )
    }
  const http1k = ctx.shared.http.get(1000)
  if (best1k && http1k)
    out.push(
      `generic 1,000-reading batches at ${round((best1k.rate / http1k) * 100, 1)} % of the HTTP ceiling (uWS + JSON.parse)`,
    )
  return out
}

const args = parseArgs(process.argv.slice(2))
if (args.tmpfs) useTmpfs()
// On a disk, each data directory where the runs before it left no freed inodes (data-dirs.ts).
const dataDirs: DataDirs | null = args.tmpfs ? null : spreadDataDirs()
let stopRedis: (() => Promise<void>) | undefined
let redisUrl = process.env.REDIS_URL
if (args.redis && !redisUrl) {
  const { startRedis } = await import('../test/helpers/redis.js')
  const r = await startRedis()
  redisUrl = r.url
  stopRedis = () => r.stop()
}
// --clickhouse: the service stores in a ClickHouse server (meterflow clickhouse-server, or
// the one CLICKHOUSE_URL names) instead of chDB: the cost of the server transport.
let clickhouseUrl = process.env.CLICKHOUSE_URL?.replace(/\/+$/, '')
let stopClickHouse: (() => Promise<void>) | undefined
if (args.clickhouse && !clickhouseUrl) {
  const { startClickHouse } = await import('../test/helpers/clickhouse.js')
  const ch = await startClickHouse()
  clickhouseUrl = ch.url
  stopClickHouse = () => ch.stop()
}
if (!args.clickhouse) clickhouseUrl = undefined
const chosen = args.scenarios.length
  ? Object.keys(SCENARIOS).filter((s) => args.scenarios.includes(s))
  : Object.keys(SCENARIOS)
const machine = {
  cpu: cpuModel(),
  cores: os.availableParallelism(),
  node: process.version,
  platform: `${os.platform()} ${os.release()}`,
  loadavg: os.loadavg().map((x) => round(x, 2)),
  memGiB: round(os.totalmem() / 2 ** 30, 1),
  dataDirs: dataDirs?.placement ?? os.tmpdir(),
  server: [
    'node',
    ...serverNodeFlags(),
    serverRuntime() === 'dist' ? 'dist/main.js' : '--import tsx src/main.ts',
  ].join(' '),
}
console.error(
  `meterflow bench (${args.tiny ? 'tiny' : args.quick ? 'quick' : 'full'}; ${redisUrl ? 'Redis coordination' : 'in-process coordination'}; ${clickhouseUrl ? `ClickHouse server ${clickhouseUrl}` : 'chDB'}) on ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, load ${machine.loadavg.join(' ')}; server: ${machine.server}; data dirs in ${machine.dataDirs}`,
)

interface Run {
  results: ScenarioResult[]
  /** the target verdicts of this run */
  targets: string[]
  /** load average at the run's end */
  load: number[]
}
let failed = false

/** One run of every chosen scenario, in a context of its own (its ceilings are its own). */
async function runOnce(): Promise<Run> {
  const ctx = makeCtx(
    { quick: args.quick, tiny: args.tiny, profile: args.profile, redisUrl, clickhouseUrl },
    (m) => console.error(m),
  )
  const results: ScenarioResult[] = []
  for (const name of chosen) {
    const t = performance.now()
    ctx.log(`▶ ${name}`)
    try {
      results.push(await SCENARIOS[name]!(ctx))
    } catch (err) {
      failed = true
      ctx.log(`✗ ${name}: ${(err as Error).stack ?? err}`)
      results.push({ name, rows: [], notes: [`FAILED: ${(err as Error).message.split('\n')[0]}`] })
    }
    ctx.log(`  ${name} took ${round((performance.now() - t) / 1000, 1)} s`)
  }
  addRatios(ctx, results)
  const load = os.loadavg().map((x) => round(x, 2))
  return { results, targets: verdicts(ctx, results), load }
}

const runs: Run[] = []
const started = performance.now()
try {
  for (let i = 1; i <= args.runs; i++) {
    if (args.runs > 1) console.error(`run ${i} of ${args.runs}`)
    const run = await runOnce()
    runs.push(run)
    if (args.runs > 1)
      console.log(`\nRun ${i} of ${args.runs} (load average at its end ${run.load.join(' ')}):\n`)
    console.log(table(run.results))
    if (run.targets.length)
      console.log('\nTargets:\n' + run.targets.map((s) => `- ${s}`).join('\n'))
  }
} finally {
  await stopRedis?.()
  await stopClickHouse?.()
  dataDirs?.remove()
}
const medians = args.runs > 1 ? spreads(runs.map((r) => r.results)) : undefined
if (medians)
  console.log(
    `\nMedians of ${args.runs} runs (min–max); load average at the runs' ends: ${runs.map((r) => r.load[0]).join(', ')}:\n\n${spreadTable(medians)}`,
  )
console.log(
  `\n${round((performance.now() - started) / 1000, 1)} s; load average at end ${os
    .loadavg()
    .map((x) => round(x, 2))
    .join(' ')} on ${machine.cores} cores (shared machine: compare ratios, not absolute figures)`,
)
if (args.profile) console.log(`CPU profiles of the server: ${RESULTS_DIR}/*.cpuprofile`)
if (args.json) {
  fs.mkdirSync(path.dirname(path.resolve(args.json)), { recursive: true })
  fs.writeFileSync(
    args.json,
    JSON.stringify(
      {
        when: new Date().toISOString(),
        mode: args.tiny ? 'tiny' : args.quick ? 'quick' : 'full',
        coordination: redisUrl ? 'redis' : 'memory',
        store: clickhouseUrl ? 'clickhouse-server' : 'chdb',
        machine,
        // the first run's, as with a single run; every run and the medians follow
        targets: runs[0]!.targets,
        scenarios: runs[0]!.results,
        ...(medians
          ? {
              runs: runs.map((r) => ({ load: r.load, targets: r.targets, scenarios: r.results })),
              medians,
            }
          : {}),
      },
      null,
      2,
    ) + '\n',
  )
}
process.exit(failed ? 1 : 0)
