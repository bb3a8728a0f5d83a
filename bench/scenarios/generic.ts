// Scenario 3, generic ingest end to end: POST /api/v1/reportData with shape-A saldo readings
// (rising registers, so no quality flag fires) through the whole path — auth, validation,
// admit, meter actors, group commit into chDB — answered only after the rows are stored.
// Meters are provisioned in a first pass (timed separately) so the measured runs are the
// steady state of known meters. Each lane (16; quick 8, tiny 4) owns 200 meters (tiny 50;
// batch 100: 100 meters);
// a request carries batch/meters readings per meter.
import type { Ctx } from '../lib/context.js'
import { genericMeter } from '../lib/bodies.js'
import { fromLoad, round, type Row, type ScenarioResult } from '../lib/report.js'
import { ingestEnv, loadConfig, measure, STEP_MS } from './ingest-common.js'

export async function generic(ctx: Ctx): Promise<ScenarioResult> {
  const rows: Row[] = []
  const notes: string[] = []
  const env = await ingestEnv(ctx, 'generic')
  try {
    // Provisioning pass: one request per lane naming each of its meters once.
    const t0 = performance.now()
    const provStart = env.nextStart()
    await Promise.all(
      Array.from({ length: env.lanes }, async (_, lane) => {
        const readings = Array.from({ length: env.meters }, (_, i) => ({
          meter: genericMeter(lane, i),
          kind: 'saldo',
          value: 0,
          unit: 'kwh',
          recorded_at: new Date(provStart).toISOString(),
        }))
        const r = await env.server.call('POST', '/api/v1/reportData', env.token, { readings })
        if (r.status !== 201)
          throw new Error(`provisioning → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
      }),
    )
    const provMs = performance.now() - t0
    notes.push(
      `provisioning pass: ${env.lanes * env.meters} new meters in ${round(provMs)} ms (${round((env.lanes * env.meters) / (provMs / 1000))} meters/s, each with its first reading); not in the figures below.`,
    )

    const plan: { batch: number; closed: number[]; open: number[] }[] = ctx.tiny
      ? [{ batch: 1000, closed: [4], open: [0.5] }]
      : ctx.quick
        ? [
            { batch: 100, closed: [8], open: [] },
            { batch: 1000, closed: [2, 8], open: [0.5] },
            { batch: 5000, closed: [4], open: [] },
          ]
        : [
            { batch: 100, closed: [1, 4, 16], open: [0.5] },
            { batch: 1000, closed: [1, 4, 16], open: [0.25, 0.5, 0.75] },
            { batch: 5000, closed: [1, 4, 16], open: [0.5] },
          ]
    for (const { batch, closed, open } of plan) {
      const meters = Math.min(batch, env.meters)
      let best = 0
      let bestInsert = 0
      for (const c of closed) {
        const body = {
          kind: 'generic' as const,
          batch,
          meters,
          startMs: env.nextStart(),
          stepMs: STEP_MS,
        }
        const { m, insertMean, inserts } = await measure(
          env,
          loadConfig(env, ctx, '/api/v1/reportData', body, { mode: 'closed', connections: c }),
        )
        const row = fromLoad('generic', `batch ${batch}, closed c=${c}`, m, env.server.peakRssMiB())
        row.detail = { ...row.detail, insertMeanRows: round(insertMean), inserts }
        rows.push(row)
        if (row.rate > best) {
          best = row.rate
          bestInsert = insertMean
        }
      }
      ctx.shared.generic.set(batch, best)
      if (bestInsert > 0) ctx.shared.insertSizes.push(Math.round(bestInsert))
      for (const f of open) {
        const rate = (best * f) / batch
        if (!(rate > 0)) continue
        const body = {
          kind: 'generic' as const,
          batch,
          meters,
          startMs: env.nextStart(),
          stepMs: STEP_MS,
        }
        const { m, insertMean, inserts } = await measure(
          env,
          loadConfig(env, ctx, '/api/v1/reportData', body, {
            mode: 'open',
            rate,
            connections: 4,
            maxConnections: 256,
          }),
        )
        const row = fromLoad(
          'generic',
          `batch ${batch}, open ${round(f * 100)} % of max (${round(rate, 1)} req/s)`,
          m,
          env.server.peakRssMiB(),
        )
        row.detail = { ...row.detail, insertMeanRows: round(insertMean), inserts, fractionOfMax: f }
        rows.push(row)
      }
    }
  } finally {
    await env.close()
  }
  notes.push(
    'rate = readings the server answered as created, per second of the measured window; CPU = server process (all threads) per 1,000 created readings.',
  )
  if (ctx.redisUrl) notes.push('coordination: Redis (REDIS_URL).')
  return { name: 'generic', rows, notes }
}
