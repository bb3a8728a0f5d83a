// Metrics by observation (node:diagnostics_channel): the ingest pipeline, the decoder pool,
// the coordinator and the group-commit writers publish what they do; this records it. The
// parts carry no metric code and are never wrapped. Channels are process-wide, so every
// event names its source and only this app's parts are counted (tests run several apps in
// one process).
import diagnostics_channel from 'node:diagnostics_channel'
import { takeChannel, type TakeEvent } from '../coord/channel.js'
import { decodeChannel, type DecodeEvent } from '../decode/channel.js'
import { ApiError } from '../errors.js'
import { ingestChannel, type IngestTrace } from '../ingest/channel.js'
import { insertChannel, type InsertEvent } from '../store/channel.js'
import type { Metrics } from './metrics.js'

export interface ObservedParts {
  pipeline: object
  pool: object | null
  coord: object
  writers: readonly object[]
}

/** Starts recording the parts' events into `m`; returns the function that stops it. */
export function observe(m: Metrics, parts: ObservedParts): () => void {
  const started = new WeakMap<IngestTrace, () => number>()
  const ingest = {
    start(ctx: IngestTrace) {
      if (ctx.pipeline === parts.pipeline)
        started.set(ctx, m.batchSeconds.startTimer({ source: ctx.req.source }))
    },
    asyncEnd(ctx: IngestTrace) {
      const end = started.get(ctx)
      if (!end) return
      started.delete(ctx)
      recordIngest(m, ctx)
      end()
    },
  }
  const decode = (msg: unknown) => {
    const e = msg as DecodeEvent
    if (e.pool !== parts.pool) return
    if (e.outcomes === null) return m.decode.inc({ kind: e.kind, outcome: 'error' }, e.count)
    // Counted per outcome first: an `inc` per telegram hashed its labels every time (3 % of
    // a telegram gateway request's allocations).
    const counts = new Map<string, number>()
    for (const outcome of e.outcomes) counts.set(outcome, (counts.get(outcome) ?? 0) + 1)
    for (const [outcome, n] of counts) m.decode.inc({ kind: e.kind, outcome }, n)
  }
  const take = (msg: unknown) => {
    const e = msg as TakeEvent
    if (e.coord !== parts.coord) return
    if (e.ok === null) return m.coordErrors.inc()
    if (e.ok) return
    const kind = limitKind(e.key)
    m.rateLimitHits.inc({ limit: kind }, kind === 'provision_cap' ? e.by : 1)
  }
  const insert = (msg: unknown) => {
    const e = msg as InsertEvent
    if (!parts.writers.includes(e.writer)) return
    m.groupCommitSeconds.observe({ table: e.table }, e.ms / 1000)
    m.groupCommitRows.observe({ table: e.table }, e.rows)
  }
  ingestChannel.subscribe(ingest as never)
  decodeChannel.subscribe(decode)
  takeChannel.subscribe(take)
  insertChannel.subscribe(insert)
  return () => {
    ingestChannel.unsubscribe(ingest as never)
    diagnostics_channel.unsubscribe(decodeChannel.name, decode)
    diagnostics_channel.unsubscribe(takeChannel.name, take)
    diagnostics_channel.unsubscribe(insertChannel.name, insert)
  }
}

/** Readings by outcome and batches by answer code, for one finished ingest call. */
function recordIngest(m: Metrics, ctx: IngestTrace): void {
  const source = ctx.req.source
  if (ctx.result) {
    const counts = new Map<string, number>()
    for (const r of ctx.result.results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1)
    for (const [status, n] of counts) m.readings.inc({ source, status }, n)
    m.batches.inc({ source, code: ctx.result.accepted > 0 ? '201' : '200' })
    return
  }
  const code = ctx.error instanceof ApiError ? ctx.error.status : 500
  m.batches.inc({ source, code: String(code) })
  const n = Array.isArray(ctx.req.items) ? ctx.req.items.length : 0
  if (n) m.readings.inc({ source, status: code === 422 ? 'invalid' : 'failed' }, n)
}

function limitKind(key: string): string {
  if (key.startsWith('rl:token:')) return 'token'
  if (key.startsWith('rl:webhook-ip:')) return 'webhook_ip'
  if (key.startsWith('provision:')) return 'provision_cap'
  return 'other'
}
