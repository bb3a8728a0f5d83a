// Scenario 1, HTTP ceiling: the same generic /reportData bodies sent by the same load
// generator to a bare uWebSockets.js server (bench/lib/http-ceiling-server.ts) that reads each
// body and JSON.parses it, then answers. Nothing else. Also checks the load generator is not
// the bottleneck: autocannon against the same server and body, side by side.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Ctx } from '../lib/context.js'
import { LoadGen } from '../lib/loadgen.js'
import { cpuMs, peakRssMiB } from '../lib/proc.js'
import { fromLoad, round, type Row, type ScenarioResult } from '../lib/report.js'
import { freshDataDir } from '../lib/data-dirs.js'
import { ROOT } from '../lib/server.js'
import { bodyFactory } from '../lib/bodies.js'
import { startChildServer } from '../lib/child-server.js'

const run = promisify(execFile)

const startCeiling = (parse: boolean) =>
  startChildServer('bench/lib/http-ceiling-server.ts', [parse ? 'parse' : 'raw'])

export async function httpCeiling(ctx: Ctx): Promise<ScenarioResult> {
  const rows: Row[] = []
  const notes: string[] = []
  const batches = ctx.tiny ? [1000] : ctx.quick ? [100, 1000, 5000] : [100, 1000, 5000]
  const gen = new LoadGen()
  const variants = ctx.quick || ctx.tiny ? [true] : [true, false]
  try {
    for (const parse of variants) {
      const srv = await startCeiling(parse)
      try {
        for (const batch of batches) {
          const m = await gen.run(
            {
              host: '127.0.0.1',
              port: srv.port,
              path: '/api/v1/reportData',
              headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
              mode: 'closed',
              connections: 16,
              lanes: 16,
              warmupMs: ctx.warmupMs,
              durationMs: ctx.durationMs,
              // Prebuilt bodies: at this rate building each body would make the generator
              // the bottleneck (measured: 71 % of autocannon's rate when built per request).
              body: {
                kind: 'pool',
                size: 32,
                of: {
                  kind: 'generic',
                  batch,
                  meters: Math.min(batch, 200),
                  startMs: Date.UTC(2026, 0, 1),
                  stepMs: 60_000,
                },
              },
            },
            () => cpuMs(srv.child.pid!),
          )
          const row = fromLoad(
            'http-ceiling',
            `${parse ? 'JSON.parse' : 'no parse'}, batch ${batch}, c=16`,
            m,
            peakRssMiB(srv.child.pid!),
          )
          row.rate = m.sentReadingsPerS
          rows.push(row)
          if (parse) ctx.shared.http.set(batch, row.rate)
        }
        // Is our load generator the bottleneck? The same server and a 1,000-reading body
        // through autocannon (its own process too), same connections and duration.
        if (parse && !ctx.tiny) {
          const { make, readings } = bodyFactory({
            kind: 'generic',
            batch: 1000,
            meters: 200,
            startMs: Date.UTC(2026, 0, 1),
            stepMs: 60_000,
          })
          const file = path.join(freshDataDir('ac'), 'body.json')
          fs.writeFileSync(file, make(0, 0))
          const secs = Math.max(2, Math.round((ctx.durationMs + ctx.warmupMs) / 1000))
          const lean = rows.find((r) => r.label.startsWith('JSON.parse, batch 1000'))
          try {
            const { stdout } = await run(
              process.execPath,
              [
                path.join(ROOT, 'node_modules/autocannon/autocannon.js'),
                '-c',
                '16',
                '-d',
                String(secs),
                '-m',
                'POST',
                '-H',
                'content-type=application/json',
                '-i',
                file,
                '--json',
                `http://127.0.0.1:${srv.port}/api/v1/reportData`,
              ],
              { maxBuffer: 1 << 24 },
            )
            const ac = JSON.parse(stdout) as {
              requests: { average: number }
              latency: { p50: number; p99: number }
            }
            rows.push({
              scenario: 'http-ceiling',
              label: 'autocannon, batch 1000, c=16',
              rate: ac.requests.average * readings,
              unit: 'readings/s',
              p50: ac.latency.p50,
              p99: ac.latency.p99,
              detail: { requestsPerS: ac.requests.average },
            })
            if (lean)
              notes.push(
                `load generator check (batch 1000, c=16): lean client ${round(lean.rate / readings)} req/s vs autocannon ${round(ac.requests.average)} req/s (${round((lean.rate / readings / ac.requests.average) * 100)} %); the lean client is used for every scenario.`,
              )
          } catch (e) {
            notes.push(`autocannon comparison failed: ${(e as Error).message.split('\n')[0]}`)
          } finally {
            fs.rmSync(path.dirname(file), { recursive: true, force: true })
          }
        }
      } finally {
        srv.stop()
      }
    }
  } finally {
    gen.close()
  }
  notes.push(
    'the ceiling server reads the whole body and JSON.parses it (a "no parse" variant runs in full mode); it does no auth, validation or storage.',
  )
  return { name: 'http-ceiling', rows, notes }
}
