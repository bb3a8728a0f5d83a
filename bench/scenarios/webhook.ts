// Scenario 5, webhook ingest: POST /api/v1/webhooks/{endpoint} with a foreign JSON body
// ({uplinks:[{dev_eui, decoded:{volume_l}, received_at}]}) mapped by the JSONata mapping of
// operator-api.md's example, then the ordinary ingest path. The per-IP limit (120/min) is
// the product's rule, not a cost: the generator spreads connections over 127.x.y.z source
// addresses (a new one every 100 requests) so the limit does not cap the measurement.
import type { Ctx } from '../lib/context.js'
import { webhookMeter } from '../lib/bodies.js'
import { fromLoad, round, type Row, type ScenarioResult } from '../lib/report.js'
import { ingestEnv, loadConfig, measure, STEP_MS } from './ingest-common.js'

export const MAPPING = {
  items: 'uplinks',
  fields: {
    meter: 'dev_eui',
    kind: "'saldo'",
    value: 'decoded.volume_l',
    unit: "'l'",
    recorded_at: 'received_at',
  },
}

export async function webhook(ctx: Ctx): Promise<ScenarioResult> {
  const rows: Row[] = []
  const notes: string[] = []
  const env = await ingestEnv(ctx, 'webhook')
  try {
    const ep = await env.server.admin('POST', `/workspaces/${env.ws}/webhook-endpoints`, {
      name: 'bench',
      mapping: MAPPING,
    })
    const path = ep.data.path as string
    const token = ep.data.token as string
    // Provisioning pass through the webhook itself.
    const provStart = env.nextStart()
    for (let lane = 0; lane < env.lanes; lane++) {
      const uplinks = Array.from({ length: env.meters }, (_, i) => ({
        dev_eui: webhookMeter(lane, i),
        decoded: { volume_l: 0 },
        received_at: new Date(provStart).toISOString(),
      }))
      const r = await env.server.call('POST', path, token, { uplinks })
      if (r.status !== 200)
        throw new Error(
          `webhook provisioning → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`,
        )
    }
    const plan = ctx.tiny
      ? [{ batch: 1000, c: 4 }]
      : ctx.quick
        ? [{ batch: 1000, c: 8 }]
        : [
            { batch: 100, c: 16 },
            { batch: 1000, c: 4 },
            { batch: 1000, c: 16 },
          ]
    for (const { batch, c } of plan) {
      const body = {
        kind: 'webhook' as const,
        batch,
        meters: Math.min(batch, env.meters),
        startMs: env.nextStart(),
        stepMs: STEP_MS,
      }
      const cfg = loadConfig(env, ctx, path, body, {
        mode: 'closed',
        connections: c,
        rotateAfter: 100,
      })
      cfg.headers.authorization = `Bearer ${token}`
      const { m, insertMean } = await measure(env, cfg)
      const row = fromLoad('webhook', `batch ${batch}, closed c=${c}`, m, env.server.peakRssMiB())
      row.detail = { ...row.detail, insertMeanRows: round(insertMean) }
      rows.push(row)
    }
  } finally {
    await env.close()
  }
  notes.push(
    'ratio = webhook readings/s against generic /reportData readings/s at the same batch size in this run (the cost of the JSONata mapping and the webhook layer).',
  )
  return { name: 'webhook', rows, notes }
}
