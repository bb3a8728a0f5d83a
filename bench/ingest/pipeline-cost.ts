// What the ingest path costs the main thread per reading, without HTTP or a load generator:
// the real pipeline (Meterflow in this process on a fresh chDB) handed gateway-shaped
// requests by `lanes` concurrent loops, each body JSON.parsed and each answer
// JSON.stringified as the route does. Prints, per measured window, the main thread's CPU
// and the bytes it allocated per reading (V8's sampling heap profiler, counting what was
// collected too), then the largest allocating functions. The service's bench (`gateway`)
// measures the same path with HTTP on a loaded machine, where a few per cent are noise;
// this is for comparing two trees of the code a few per cent apart (run it alternately).
//
//   node --import tsx bench/ingest/pipeline-cost.ts [--lanes 8] [--meters 500] [--rounds 60]
//     [--windows 2] [--shared [--late] | --telegram | --fleet N] [--redis URL [--keep-s S]]
//     [--top 15]
//
// --shared: every lane names the same meters (the `shared` scenario's bodies), else each
// lane its own (the `gateway` scenario's); --late: of those, every 10th reading 3 hours late
// (the `shared 500, 10 % late by 3 h` row's); --fleet N: each lane owns N meters, every
// request names the next `meters` of them, each meter reporting every 15 minutes (the
// `fleet` scenario's bodies); --telegram: the telegram gateway rows' plain
// wM-Bus bodies (decoded by one worker, whose time is not counted); --redis URL: coordinated
// through that redis-server, as an instance of a deployment (every meter's turn under a
// lease; flush it between runs); --keep-s: its METER_LEASE_KEEP_S (5 with --fleet 40000:
// every meter back after its lease went, a lease cycle per reading). Linux only (the main
// thread's CPU is read from /proc).
import fs from 'node:fs'
import { Session } from 'node:inspector/promises'
import { parseArgs } from 'node:util'
import type { Ingest } from '../../src/ingest/types.js'
import { startTestServer } from '../../test/helpers/server.js'
import { bodyFactory } from '../lib/bodies.js'
import { frameShapes, type FixtureFrame } from '../lib/telegram-frames.js'
import { threadCpuMs } from '../lib/proc.js'

const { values: o } = parseArgs({
  options: {
    lanes: { type: 'string', default: '8' },
    meters: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '60' },
    windows: { type: 'string', default: '2' },
    shared: { type: 'boolean', default: false },
    late: { type: 'boolean', default: false },
    telegram: { type: 'boolean', default: false },
    fleet: { type: 'string', default: '0' },
    top: { type: 'string', default: '15' },
    redis: { type: 'string' },
    'keep-s': { type: 'string' },
  },
})
const lanes = Number(o.lanes)
const meters = Number(o.meters)
const rounds = Number(o.rounds)
const fleet = Number(o.fleet)

interface SampledNode {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  children: SampledNode[]
}

// The telegram bodies' frames differ (telegram-frames.ts): the repeat check runs as configured.
const server = await startTestServer({
  WORKERS: '1',
  ...(o.redis ? { REDIS_URL: o.redis } : {}),
  ...(o['keep-s'] ? { METER_LEASE_KEEP_S: o['keep-s'] } : {}),
})
const ws = await server.admin('POST', '/workspaces', {
  name: 'pipeline-cost',
  provision_cap_per_hour: 1_000_000_000,
})
const ingest = (server.app.parts as { ingest: Ingest }).ingest
// The `gateway` and `shared` scenarios' bodies (bench/lib/bodies.ts), a minute apart.
const start = Date.now() - 86_400_000
const plainShapes = () =>
  frameShapes(
    (
      JSON.parse(
        fs.readFileSync(new URL('../fixtures/telegrams.json', import.meta.url), 'utf8'),
      ) as Record<string, FixtureFrame[]>
    ).plain!,
  ).shapes
const bodies = bodyFactory(
  fleet
    ? { kind: 'fleet', batch: meters, meters: fleet, startMs: start, stepMs: 900_000 }
    : o.telegram
      ? {
          kind: 'telegramGateway',
          batch: meters,
          shapes: plainShapes(),
          suffix: 'plain',
          idDigit: 1,
          startMs: start,
          stepMs: 60_000,
        }
      : o.shared
        ? {
            kind: 'shared',
            batch: meters,
            lanes,
            startMs: start,
            stepMs: 60_000,
            ...(o.late ? { lateEvery: 10, lateMs: 3 * 3_600_000 } : {}),
          }
        : { kind: 'generic', batch: meters, meters, startMs: start, stepMs: 60_000 },
)

/** `count` requests per lane from minute `from`, lanes concurrent, each built before it is sent. */
async function run(from: number, count: number): Promise<void> {
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let r = 0; r < count; r++) {
        const parsed = JSON.parse(bodies.make(lane, from + r)) as { readings: unknown[] }
        const out = await ingest.ingest({
          workspaceId: ws.data.id,
          items: parsed.readings,
          source: 'report',
          errorPrefix: 'readings',
        })
        if (out.accepted !== meters)
          throw new Error(
            `accepted ${out.accepted} of ${meters}: ${JSON.stringify(out.results[0])}`,
          )
        JSON.stringify(out)
      }
    }),
  )
}

const inspector = new Session()
inspector.connect()
await inspector.post('HeapProfiler.enable')
// First contact of every meter, and the code warmed up.
const warmUp = fleet ? 2 * Math.ceil(fleet / meters) : 3
await run(0, warmUp)

const bySite = new Map<string, number>()
for (let w = 0; w < Number(o.windows); w++) {
  await inspector.post('HeapProfiler.startSampling', {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  })
  const cpu0 = threadCpuMs(process.pid).main
  const t0 = performance.now()
  await run(warmUp + w * rounds, rounds)
  const ms = performance.now() - t0
  const cpu = threadCpuMs(process.pid).main - cpu0
  const { profile } = (await inspector.post('HeapProfiler.stopSampling')) as {
    profile: { head: SampledNode }
  }
  let bytes = 0
  const walk = (n: SampledNode) => {
    bytes += n.selfSize
    const f = n.callFrame
    const site = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|bench|test|node_modules)\//, '$1/')}:${f.lineNumber + 1}`
    bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize)
    for (const c of n.children) walk(c)
  }
  walk(profile.head)
  const n = lanes * rounds * meters
  console.log(
    `window ${w + 1}: ${n} readings, ${Math.round(n / (ms / 1000))}/s; main thread ` +
      `${((cpu / n) * 1000).toFixed(2)} ms per 1,000; allocated ${(bytes / n / 1024).toFixed(2)} KB per reading`,
  )
}
const total = [...bySite.values()].reduce((a, b) => a + b, 0)
console.log('\nallocated bytes by function (all windows):')
for (const [site, b] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(o.top)))
  console.log(`${((100 * b) / total).toFixed(1).padStart(6)} %  ${site}`)
await server.close()
process.exit(0)
