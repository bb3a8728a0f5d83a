// Prometheus metrics (prom-client), one registry per app so several apps in one process
// (tests) never share counters. Labels are bounded sets (statuses, sources, tables); never a
// token, workspace or meter, so the page has a fixed size and no tenant data.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

export class Metrics {
  readonly registry = new Registry()

  readonly readings = new Counter({
    name: 'meterflow_readings_total',
    help: 'Reading items by ingest source and outcome (created, duplicate, rejected_*, invalid = part of a 422 batch, failed = batch answered 5xx).',
    labelNames: ['source', 'status'] as const,
    registers: [this.registry],
  })
  readonly batches = new Counter({
    name: 'meterflow_ingest_batches_total',
    help: 'Ingest batches by source and answer status code.',
    labelNames: ['source', 'code'] as const,
    registers: [this.registry],
  })
  readonly batchSeconds = new Histogram({
    name: 'meterflow_ingest_batch_seconds',
    help: 'Time from a batch entering the pipeline to its answer (validate, decode, admit, actors, store).',
    labelNames: ['source'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  })
  readonly decode = new Counter({
    name: 'meterflow_decode_total',
    help: 'Decoder outcomes per telegram or frame (ok, rejected_unconfigured, rejected_undecodable, invalid, error = the batch failed in the pool).',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  })
  readonly groupCommitSeconds = new Histogram({
    name: 'meterflow_group_commit_seconds',
    help: 'Duration of one group-commit INSERT.',
    labelNames: ['table'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  })
  readonly groupCommitRows = new Histogram({
    name: 'meterflow_group_commit_rows',
    help: 'Rows carried by one group-commit INSERT.',
    labelNames: ['table'] as const,
    buckets: [1, 10, 100, 1000, 10_000, 100_000],
    registers: [this.registry],
  })
  readonly rateLimitHits = new Counter({
    name: 'meterflow_rate_limit_hits_total',
    help: 'Requests refused by a limit: token (per-token API rate), webhook_ip (webhook ingest per IP), provision_cap (hourly auto-provisioning cap, per item).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  })
  readonly coordErrors = new Counter({
    name: 'meterflow_coordination_errors_total',
    help: 'Coordination (Redis) calls that failed; each became a 503 where a request needed it.',
    registers: [this.registry],
  })

  constructor(defaults = true) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: 'meterflow_' })
  }

  /** A gauge whose value is read at scrape time; errors keep the last value. */
  gauge(
    name: string,
    help: string,
    read: (set: (value: number, labels?: Record<string, string>) => void) => Promise<void> | void,
    labelNames: string[] = [],
  ): Gauge<string> {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        try {
          await read((v, l) => (l ? this.set(l, v) : this.set(v)))
        } catch {
          // The page must render even when the store or Redis is down.
        }
      },
    })
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }
}
