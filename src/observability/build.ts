// The observability part: GET /metrics (Prometheus text). Counters and histograms come from
// events the ingest pipeline, decoder pool, coordinator and group-commit writers publish on
// node:diagnostics_channel (subscribers.ts), so the parts that do the work carry no metric
// code and nothing is wrapped; values that already live somewhere (mailbox depth, outbox,
// scheduler runs, stream connections) are read when Prometheus scrapes.
import type { DecoderPool } from '../decode/index.js'
import { checkAdmin } from '../http/auth.js'
import type { Router } from '../http/router.js'
import { heartbeat } from '../scheduler/scheduler.js'
import type { ActorRegistry } from '../actors/registry.js'
import type { Ingest } from '../ingest/types.js'
import type { Part } from '../lifecycle.js'
import type { Base } from '../store/base.js'
import type { StreamStats } from '../stream/conn.js'
import { Metrics } from './metrics.js'
import { observe } from './subscribers.js'
import { deliveryCountsByStatus } from '../store/events.js'

export interface ObservabilityDeps extends Pick<Base, 'config' | 'clock' | 'coord' | 'store'> {
  adminToken: string
  /** The pipeline whose events this app's /metrics counts (tests run several apps at once). */
  pipeline: Ingest
  decoder: DecoderPool
  actors: ActorRegistry
  stream: { stats: StreamStats }
}

export interface Observability extends Part {
  metrics: Metrics
  registerRoutes(router: Router): void
}

export function buildObservability(s: ObservabilityDeps): Observability {
  const m = new Metrics()
  const stopObserving = observe(m, {
    pipeline: s.pipeline,
    pool: s.decoder,
    coord: s.coord,
    writers: [s.store.readings, s.store.statusReports],
  })

  const actors = s.actors
  m.gauge(
    'meterflow_actor_mailbox_depth',
    'Readings batches queued or running in meter actor mailboxes.',
    (set) => set(actors.depth()),
  )
  m.gauge('meterflow_actors', 'Meter actors held in memory.', (set) => set(actors.size))
  m.gauge('meterflow_actor_readings_held', "Readings held in the meter actors' windows.", (set) =>
    set(actors.held()),
  )
  m.gauge(
    'meterflow_actor_bound',
    'What the actor registry evicts at (from the heap limit): actors, or readings held.',
    (set) => {
      set(actors.bounds.maxActors, { of: 'actors' })
      set(actors.bounds.maxReadings, { of: 'readings' })
    },
    ['of'],
  )
  m.gauge(
    'meterflow_actor_evictions',
    'Idle meter actors evicted since start; each loads its window from the store at its next reading. Growing steadily: the fleet is past the bounds (a larger heap moves them).',
    (set) => set(actors.evicted),
  )
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
  const stream = s.stream.stats
  m.gauge('meterflow_stream_connections', 'Open WebSocket stream connections.', (set) =>
    set(stream.connections),
  )
  m.gauge('meterflow_stream_in_flight', 'Stream messages being processed.', (set) =>
    set(stream.inFlight),
  )
  m.gauge(
    'meterflow_stream_refused',
    'Stream messages refused by flow control since start.',
    (set) => set(stream.refused),
  )
  m.gauge(
    'meterflow_stream_answers',
    'Stream answers by status since start.',
    (set) => {
      for (const [status, n] of stream.answers) set(n, { status: String(status) })
    },
    ['status'],
  )

  return {
    name: 'observability',
    metrics: m,
    stop: stopObserving,
    registerRoutes(router: Router) {
      // Never public: METRICS_TOKEN when set (a scraper's own token), else the admin token.
      const token = s.config.METRICS_TOKEN ?? s.adminToken
      router.route({
        method: 'GET',
        path: '/metrics',
        summary:
          'Prometheus metrics (text exposition format); bearer METRICS_TOKEN when set, else the admin token',
        auth: 'admin',
        handler: async (req) => {
          checkAdmin(req, token)
          return {
            status: 200,
            body: await m.text(),
            headers: { 'content-type': m.registry.contentType },
          }
        },
      })
    },
  }
}
