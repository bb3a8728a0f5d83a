// Scenario 4, telegram ingest: POST /api/v1/reportData with shape-B wM-Bus items
// (profile wmbus_oms, payload {telegram: hex}), one run per kind: plain, mode 5, mode 7, ELL
// (AES-CTR). Frames come from bench/fixtures/telegrams.json; each (lane, frame) pair is its
// own meter (named in the item, which wins over the frame's identity) so readings of a meter
// stay in order; the encrypted meters get their AES key via PUT /admin/v1/meters/{id}/wmbus-key.
// This measures decode in the worker pool + the rest of the ingest path.
import fs from 'node:fs'
import type { Ctx } from '../lib/context.js'
import { telegramMeter } from '../lib/bodies.js'
import { fromLoad, round, type Row, type ScenarioResult } from '../lib/report.js'
import { ROOT } from '../lib/server.js'
import { ingestEnv, loadConfig, measure, STEP_MS } from './ingest-common.js'
import path from 'node:path'

interface Fx {
  source: string
  hex: string
  key: string | null
}

export async function telegram(ctx: Ctx): Promise<ScenarioResult> {
  const fx = JSON.parse(
    fs.readFileSync(path.join(ROOT, 'bench/fixtures/telegrams.json'), 'utf8'),
  ) as Record<string, Fx[]>
  const kinds = ctx.tiny ? ['plain'] : ['plain', 'mode5', 'mode7', 'ell']
  const rows: Row[] = []
  const notes: string[] = []
  const env = await ingestEnv(ctx, 'telegram')
  const lanes = ctx.tiny ? 2 : ctx.quick ? 4 : 8
  try {
    for (const kind of kinds) {
      const frames = fx[kind]!
      const lanesUsed = Math.min(lanes, env.lanes)
      // Provision: one reading per (lane, frame) meter; encrypted ones are undecodable until
      // their key is set, so create those meters explicitly, then set the keys.
      const provStart = env.nextStart()
      const items = []
      for (let lane = 0; lane < lanesUsed; lane++)
        for (let j = 0; j < frames.length; j++)
          items.push({
            meter: telegramMeter(lane, j) + kind,
            profile: 'wmbus_oms',
            payload: { telegram: frames[j]!.hex },
            recorded_at: new Date(provStart).toISOString(),
          })
      if (kind === 'plain') {
        const r = await env.server.call('POST', '/api/v1/reportData', env.token, {
          readings: items,
        })
        if (r.status >= 300)
          throw new Error(
            `telegram provisioning → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`,
          )
      } else {
        for (let lane = 0; lane < lanesUsed; lane++)
          for (let j = 0; j < frames.length; j++) {
            const r = await env.server.call('POST', '/api/v1/meters', env.token, {
              meter_identifier: telegramMeter(lane, j) + kind,
              profile: 'wmbus_oms',
            })
            if (r.status !== 201)
              throw new Error(`POST /meters → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
            await env.server.admin('PUT', `/meters/${r.body.data.id}/wmbus-key`, {
              key: frames[j]!.key,
            })
          }
      }
      const batch = 1000
      // The meter name suffix keeps kinds apart: reuse the body factory with suffixed frames.
      const body = {
        kind: 'telegram' as const,
        batch,
        telegrams: frames.map((f) => f.hex),
        startMs: env.nextStart(),
        stepMs: STEP_MS,
        suffix: kind,
      }
      const { m, insertMean } = await measure(
        env,
        loadConfig(env, ctx, '/api/v1/reportData', body, {
          mode: 'closed',
          connections: lanesUsed,
        }),
      )
      const row = fromLoad(
        'telegram',
        `${kind} (${frames.length} frames), batch ${batch}, c=${lanesUsed}`,
        m,
        env.server.peakRssMiB(),
        'telegrams/s',
      )
      row.detail = { ...row.detail, insertMeanRows: round(insertMean) }
      if (m.rejected > 0)
        notes.push(
          `${kind}: ${m.rejected} items rejected in the window (statuses ${JSON.stringify(m.statuses)})`,
        )
      rows.push(row)
    }
  } finally {
    await env.close()
  }
  notes.push(
    'one reading per telegram (the main register); rate = telegrams answered created per second; WORKERS = cores (decoder pool).',
  )
  return { name: 'telegram', rows, notes }
}
