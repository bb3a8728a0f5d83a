// The observability stage: GET /metrics (Prometheus text). Instrumentation is attached by
// decorating the shared services at build time (the ingest interface, the decoder pool,
// coordination limits, group-commit hooks), so the stages that do the work carry no metric
// code; values that already live somewhere (mailbox depth, outbox, scheduler runs, stream
// connections) are read when Prometheus scrapes.
import type { DecoderPool } from '../decode/index.js'
import { ApiError } from '../errors.js'
import { checkAdmin } from '../http/auth.js'
import type { Router } from '../http/router.js'
import type { Ingest, IngestRequest } from '../ingest/types.js'
import { heartbeat } from '../scheduler/scheduler.js'
import type { Services } from '../services.js'
import type { Stage } from '../stages.js'
import { Metrics } from './metrics.js'
import { deliveryCountsByStatus } from '../store/events.js'

export interface ObservabilityDeps {
  decoder: DecoderPool | null
}

export function buildObservabilityStage(
  s: Services,
  deps: ObservabilityDeps,
): Stage & { metrics: Metrics } {
  const m = new Metrics()
  s.metrics = m
  instrumentIngest(s, m)
  if (deps.decoder) instrumentDecoder(deps.decoder, m)
  instrumentCoord(s, m)
  for (const [table, gc] of [
    ['readings', s.store.readings],
    ['status_reports', s.store.statusReports],
  ] as const) {
    const prev = gc.onInsert
    gc.onInsert = (rows, ms) => {
      prev?.(rows, ms)
      m.groupCommitSeconds.observe({ table }, ms / 1000)
      m.groupCommitRows.observe({ table }, rows)
    }
  }

  const actors = () => s.actors
  m.gauge(
    'meterflow_actor_mailbox_depth',
    'Readings batches queued or running in meter actor mailboxes.',
    (set) => set(actors()?.depth() ?? 0),
  )
  m.gauge('meterflow_actors', 'Meter actors held in memory.', (set) => set(actors()?.size ?? 0))
  m.gauge(
    'meterflow_event_deliveries',
    'Event deliveries by status; pending is the outbox backlog (read from the store at scrape time).',
    async (set) => {
      const seen = await deliveryCountsByStatus(s.store.sql)
      for (const st of ['pending', 'delivered', 'failed']) set(seen.get(st) ?? 0, { status: st })
    },
    ['status'],
  )
  m.gauge(
    'meterflow_scheduler_lag_seconds',
    'Seconds since the last scheduler run of any instance (-1 = never ran); stale past 3 intervals.',
    async (set) => {
      const h = await heartbeat(s.store.sql, s.clock, s.config.SCHEDULER_INTERVAL_S)
      set(h.last_run_at ? Math.max(0, (s.clock.now() - Date.parse(h.last_run_at)) / 1000) : -1)
    },
  )
  m.gauge('meterflow_scheduler_interval_seconds', 'Configured scheduler interval.', (set) =>
    set(s.config.SCHEDULER_INTERVAL_S),
  )
  const stream = () => s.stream
  m.gauge('meterflow_stream_connections', 'Open WebSocket stream connections.', (set) =>
    set(stream()?.stats.connections ?? 0),
  )
  m.gauge('meterflow_stream_in_flight', 'Stream messages being processed.', (set) =>
    set(stream()?.stats.inFlight ?? 0),
  )
  m.gauge(
    'meterflow_stream_refused',
    'Stream messages refused by flow control since start.',
    (set) => set(stream()?.stats.refused ?? 0),
  )
  m.gauge(
    'meterflow_stream_answers',
    'Stream answers by status since start.',
    (set) => {
      for (const [status, n] of stream()?.stats.answers ?? []) set(n, { status: String(status) })
    },
    ['status'],
  )

  return {
    name: 'observability',
    metrics: m,
    registerRoutes(router: Router) {
      // Never public: METRICS_TOKEN when set (a scraper's own token), else the admin token.
      const token = s.config.METRICS_TOKEN ?? s.adminToken
      router.get('/metrics', async (req) => {
        checkAdmin(req, token)
        return {
          status: 200,
          body: await m.text(),
          headers: { 'content-type': m.registry.contentType },
        }
      })
    },
  }
}

/** Wraps `s.ingest` (every entry point calls it at request time): outcomes and latency. */
function instrumentIngest(s: Services, m: Metrics): void {
  const inner: Ingest = s.ingest
  s.ingest = {
    async ingest(req: IngestRequest) {
      const end = m.batchSeconds.startTimer({ source: req.source })
      try {
        const out = await inner.ingest(req)
        const counts = new Map<string, number>()
        for (const r of out.results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1)
        for (const [status, n] of counts) m.readings.inc({ source: req.source, status }, n)
        m.batches.inc({ source: req.source, code: out.accepted > 0 ? '201' : '200' })
        return out
      } catch (err) {
        const code = err instanceof ApiError ? err.status : 500
        m.batches.inc({ source: req.source, code: String(code) })
        const n = Array.isArray(req.items) ? req.items.length : 0
        if (n)
          m.readings.inc({ source: req.source, status: code === 422 ? 'invalid' : 'failed' }, n)
        throw err
      } finally {
        end()
      }
    },
  }
}

/** Counts decoder outcomes on the pool instance the ingest stage uses. */
function instrumentDecoder(pool: DecoderPool, m: Metrics): void {
  const telegrams = pool.decodeTelegrams.bind(pool)
  pool.decodeTelegrams = async (jobs) => {
    try {
      const out = await telegrams(jobs)
      for (const o of out) m.decode.inc({ kind: 'telegram', outcome: o.status })
      return out
    } catch (err) {
      m.decode.inc({ kind: 'telegram', outcome: 'error' }, jobs.length)
      throw err
    }
  }
  const frames = pool.decodeFrames.bind(pool)
  pool.decodeFrames = async (layout, list) => {
    try {
      const out = await frames(layout, list)
      for (const o of out) m.decode.inc({ kind: 'frame', outcome: o.ok ? 'ok' : 'invalid' })
      return out
    } catch (err) {
      m.decode.inc({ kind: 'frame', outcome: 'error' }, list.length)
      throw err
    }
  }
}

/** Limit refusals and coordination failures, seen where every limit is taken. */
function instrumentCoord(s: Services, m: Metrics): void {
  const coord = s.coord
  const take = coord.take.bind(coord)
  coord.take = async (key, limit, windowMs, by) => {
    try {
      const r = await take(key, limit, windowMs, by)
      if (!r.ok) {
        const kind = key.startsWith('rl:token:')
          ? 'token'
          : key.startsWith('rl:webhook-ip:')
            ? 'webhook_ip'
            : key.startsWith('provision:')
              ? 'provision_cap'
              : 'other'
        m.rateLimitHits.inc({ limit: kind }, kind === 'provision_cap' ? (by ?? 1) : 1)
      }
      return r
    } catch (err) {
      m.coordErrors.inc()
      throw err
    }
  }
}
