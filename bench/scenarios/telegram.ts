// Scenario 4, telegram ingest: POST /api/v1/reportData with shape-B wM-Bus items
// (profile wmbus_oms, payload {telegram: hex}), one run per kind: plain, mode 5, mode 7, ELL
// (AES-CTR). Frames come from bench/fixtures/telegrams.json; each (lane, frame) pair is its
// own meter (named in the item, which wins over the frame's identity) so readings of a meter
// stay in order; the encrypted meters get their AES key via PUT /admin/v1/meters/{id}/wmbus-key.
// This measures decode in the worker pool + the rest of the ingest path.
// Then the gateway profile of issue 13: 1 telegram per meter per request, disjoint meters per
// connection, c=8, batch 500 (and 1,000 in full runs), plain and mode 5 frames; bench/run.ts
// prints each row's ratio to the `gateway` generic row of the same batch size in the same run.
// Last, first contact over wM-Bus: telegrams of meters never heard before, named by their
// link layer alone, disjoint per connection and heard by all 8 at once (new meters/s).
import fs from 'node:fs'
import type { Ctx } from '../lib/context.js'
import {
  type BodySpec,
  telegramGatewayFrames,
  telegramGatewayMeter,
  telegramIndex,
  telegramMeter,
} from '../lib/bodies.js'
import { frameShapes, type FixtureFrame as Fx, type FrameShape } from '../lib/telegram-frames.js'
import { fromLoad, round, type Row, type ScenarioResult } from '../lib/report.js'
import type { Measured } from '../lib/loadgen.js'
import { ROOT } from '../lib/server.js'
import { drainAfterRow, eventSink } from '../lib/event-sink.js'
import { DecoderPool } from '../../src/decode/pool.js'
import { Config } from '../../src/config/index.js'
import { ingestEnv, loadConfig, measure, STEP_MS, type IngestEnv } from './ingest-common.js'
import os from 'node:os'
import path from 'node:path'

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
  const gw = await gatewayProfile(ctx, fx)
  rows.push(...gw.rows)
  notes.push(...gw.notes)
  return { name: 'telegram', rows, notes }
}

/** Connections of the gateway profile, as in bench/scenarios/deployment.ts. */
const C = 8

/**
 * The gateway profile with telegrams (issue 13): every request of a connection names each of
 * its meters once, meter i sending fixture i mod n of the kind with an identity of its own
 * and its access number and register moving on (telegram-frames.ts). Its own server, so the
 * meters and windows of the runs above are not in the way, and with the service's default
 * gateway-repeat window: its telegrams are not repeats, and checking that is part of the
 * cost. Rows carry detail.profile = 'gateway'.
 */
export async function gatewayProfile(
  ctx: Ctx,
  fx: Record<string, Fx[]>,
  kinds = ctx.tiny ? ['plain'] : ['plain', 'mode5'],
): Promise<{ rows: Row[]; notes: string[] }> {
  const batches = ctx.tiny || ctx.quick ? [500] : [500, 1000]
  const meters = Math.max(...batches)
  const rows: Row[] = []
  const notes: string[] = []
  const env = await ingestEnv(ctx, 'telegram-gateway', {
    TELEGRAM_REPEAT_WINDOW_MS: String(Config.properties.TELEGRAM_REPEAT_WINDOW_MS.default),
  })
  try {
    for (const [idDigit, kind] of kinds.entries()) {
      const frames = fx[kind]!
      const { shapes, leftOut } = frameShapes(frames)
      if (leftOut.length) notes.push(`gateway ${kind}: fixtures left out: ${leftOut.join('; ')}`)
      const used = frames.filter((f) => shapes.some((sh) => sh.source === f.source))
      const twins = frames[0]!.key ? await plainTwins(fx.plain!, used) : null
      const p = await provisionGateway(env, kind, shapes, idDigit, twins, meters)
      notes.push(
        `gateway ${kind}: provisioning ${C} × ${meters} meters${frames[0]!.key ? ' and their keys' : ''} took ${round(p)} ms (${round((C * meters) / (p / 1000))} meters/s; not measured)`,
      )
      for (const batch of batches) {
        const { row, m } = await gatewayRow(
          env,
          ctx,
          { batch, shapes, suffix: kind, idDigit },
          `gateway ${kind}, batch ${batch} (1 per meter), closed c=${C}`,
          'gateway',
        )
        if (m.rejected > 0 || m.duplicates > 0)
          notes.push(
            `gateway ${kind} batch ${batch}: ${m.rejected} rejected, ${m.duplicates} duplicates in the window (statuses ${JSON.stringify(m.statuses)})`,
          )
        rows.push(row)
      }
      if (kind === 'plain' && !ctx.tiny)
        rows.push(await heardTwice(env, ctx, shapes, idDigit, notes))
    }
    if (!ctx.tiny)
      rows.push(...(await firstContact(env, ctx, frameShapes(fx.plain!).shapes, notes)))
  } finally {
    await env.close()
  }
  notes.push(
    'gateway rows: 1 telegram per meter per request, disjoint meters per connection (fixture i mod n for meter i, its own identity, access number and register moving on; repeat window at the default); ratio = telegrams/s over the `gateway` generic row (readings/s) of the same batch size in this run (run `gateway` too).',
  )
  return { rows, notes }
}

type GatewayBodies = Extract<BodySpec, { kind: 'telegramGateway' }>

/**
 * One closed-loop row of the telegram gateway profile (c = C, a lane per connection), its
 * readings from a time base of their own.
 */
function gatewayRow(
  env: IngestEnv,
  ctx: Ctx,
  bodies: Omit<GatewayBodies, 'kind' | 'startMs' | 'stepMs'>,
  label: string,
  profile: string,
): Promise<{ row: Row; m: Measured }> {
  const body: GatewayBodies = {
    kind: 'telegramGateway',
    ...bodies,
    startMs: env.nextStart(),
    stepMs: STEP_MS,
  }
  return closedRow(env, ctx, body, label, profile)
}

/** A closed-loop row of `body` over C connections, a lane each; detail.profile = `profile`. */
async function closedRow(
  env: IngestEnv,
  ctx: Ctx,
  body: BodySpec & { batch: number },
  label: string,
  profile: string,
): Promise<{ row: Row; m: Measured }> {
  const { m, insertMean, inserts } = await measure(
    env,
    loadConfig(env, ctx, '/api/v1/reportData', body, { mode: 'closed', connections: C, lanes: C }),
  )
  const row = fromLoad('telegram', label, m, env.server.peakRssMiB(), 'telegrams/s')
  row.detail = {
    ...row.detail,
    profile,
    batch: body.batch,
    insertMeanRows: round(insertMean),
    inserts,
    load1: round(os.loadavg()[0]!, 2),
  }
  return { row, m }
}

/**
 * Several wM-Bus gateways hearing the same meters (issue 13): the plain gateway row's bodies,
 * each telegram sent by two connections with receive times 1 ms apart, so half of what
 * arrives is a repeat of the other gateway's. Its rate is telegrams stored per second (half
 * of those heard), its CPU per 1,000 stored; meters of the plain rows' first 4 connections.
 */
async function heardTwice(
  env: IngestEnv,
  ctx: Ctx,
  shapes: FrameShape[],
  idDigit: number,
  notes: string[],
): Promise<Row> {
  const batch = 500
  const { row, m } = await gatewayRow(
    env,
    ctx,
    { batch, shapes, suffix: 'plain', idDigit, hearers: 2 },
    `gateway plain, batch ${batch}, every telegram heard by 2 gateways, closed c=${C}`,
    'gateway-repeats',
  )
  row.detail = { ...row.detail, heardPerS: round(m.sentReadingsPerS) }
  notes.push(
    `gateway plain heard by 2 gateways: ${round(m.sentReadingsPerS)} telegrams/s heard, ${m.duplicates} repeats answered duplicate, ${m.rejected} rejected in the window (rate and CPU per telegram stored)`,
  )
  return row
}

/**
 * First contact over wM-Bus (issue 13: ≥ 5,000 new meters/s through /reportData, also when
 * concurrent requests name the same new meters): 500 plain telegrams of meters never heard
 * before per request, named by their link layer alone; then the same new meters heard by all
 * 8 connections at once (8 gateways, receive times 1 ms apart: one report creates each meter,
 * the 7 others are repeats). With `meter.created` subscribed, as in the `provision` scenario,
 * and each row's deliveries drained before the next. Rate = telegrams answered created = new
 * meters per second. Rows carry detail.profile = 'first-contact'.
 */
async function firstContact(
  env: IngestEnv,
  ctx: Ctx,
  shapes: FrameShape[],
  notes: string[],
): Promise<Row[]> {
  const rows: Row[] = []
  const sink = await eventSink()
  try {
    await env.server.admin('POST', `/workspaces/${env.ws}/event-subscriptions`, {
      url: sink.url,
      events: ['meter.created'],
    })
    const batch = 500
    for (const [n, shared] of [false, true].entries()) {
      const label = shared
        ? `first contact, the same ${batch} new meters heard by all ${C} gateways, closed c=${C}`
        : `first contact, ${batch} new meters per request, closed c=${C}`
      const { row, m } = await closedRow(
        env,
        ctx,
        {
          kind: 'telegramNew',
          batch,
          shapes,
          shared,
          lanes: C,
          // 8-digit identities apart from the gateway rows' (9…): 10,000,000 and 50,000,000 on.
          idBase: 10_000_000 + n * 40_000_000,
          atMs: env.nextStart(),
        },
        label,
        'first-contact',
      )
      rows.push(row)
      if (m.rejected > 0)
        notes.push(`${label}: ${m.rejected} rejected (statuses ${JSON.stringify(m.statuses)})`)
      notes.push(await drainAfterRow(env.server, sink, label))
    }
  } finally {
    sink.close()
  }
  notes.push(
    'first contact rows: rate = telegrams answered created = new meters per second (each new meter sends one telegram; heard by all 8, the 7 later copies are answered duplicate); meter.created subscribed (target ≥ 5,000 new meters/s).',
  )
  return rows
}

/**
 * Creates the meters of every connection, ms taken: one report per connection names them all,
 * then encrypted kinds get each meter's key (PUT …/wmbus-key, one call per meter, 16 at a
 * time: the slow part, ~8 ms a call, concurrent calls sharing the meter INSERT). An encrypted
 * telegram would be quarantined and replayed by the key (far slower), so encrypted meters are
 * created with a plain frame of the same unit (`twins`).
 */
async function provisionGateway(
  env: IngestEnv,
  kind: string,
  shapes: FrameShape[],
  idDigit: number,
  /** encrypted kinds: the plain frame each meter is created with (same unit) */
  twins: string[] | null,
  meters: number,
): Promise<number> {
  const t0 = performance.now()
  const names = Array.from({ length: C }, (_, lane) =>
    Array.from({ length: meters }, (_, i) => telegramGatewayMeter(lane, i, kind)),
  )
  const t = env.nextStart()
  const all = Array.from({ length: meters }, (_, i) => i)
  await Promise.all(
    names.map(async (list, lane) => {
      const first = twins
        ? all.map((i) => twins[i % twins.length]!)
        : telegramGatewayFrames(shapes, lane, meters, idDigit).request(all, telegramIndex(t))
      const readings = list.map((meter, i) => ({
        meter,
        profile: 'wmbus_oms',
        payload: { telegram: first[i]! },
        recorded_at: new Date(t).toISOString(),
      }))
      const r = await env.server.call('POST', '/api/v1/reportData', env.token, { readings })
      if (r.status >= 300)
        throw new Error(`provisioning → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
    }),
  )
  if (!twins) return performance.now() - t0
  const list = await env.server.call('GET', '/api/v1/meters', env.token)
  const ids = new Map<string, number>(
    (list.body.data as { id: number; meter_identifier: string }[]).map((m) => [
      m.meter_identifier,
      m.id,
    ]),
  )
  const todo = names.flatMap((l) =>
    l.map((meter, i) => {
      const id = ids.get(meter)
      if (id === undefined) throw new Error(`provisioning: meter ${meter} not created`)
      return { id, key: shapes[i % shapes.length]!.key }
    }),
  )
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < todo.length) {
        const { id, key } = todo[next++]!
        await env.server.admin('PUT', `/meters/${id}/wmbus-key`, { key })
      }
    }),
  )
  return performance.now() - t0
}

/**
 * For each encrypted frame, a plain fixture frame whose main register has the same unit
 * (decoded here, once): the meter is created with that unit, and its first reading is a
 * valid neighbour like the ones that follow (a unit-less first reading would make the meter
 * actor ask the store for neighbours until enough valid ones arrived).
 */
async function plainTwins(plain: Fx[], frames: Fx[]): Promise<string[]> {
  const pool = new DecoderPool({ workers: 1 })
  try {
    const p = await pool.decodeTelegrams(plain.map((f) => ({ hex: f.hex, key: null })))
    const e = await pool.decodeTelegrams(frames.map((f) => ({ hex: f.hex, key: f.key })))
    return e.map((o, j) => {
      const unit = o.status === 'ok' ? o.unit : undefined
      const i = p.findIndex((q) => q.status === 'ok' && q.unit === unit)
      if (i < 0) throw new Error(`no plain fixture frame with the unit of ${frames[j]!.source}`)
      return plain[i]!.hex
    })
  } finally {
    await pool.destroy()
  }
}
