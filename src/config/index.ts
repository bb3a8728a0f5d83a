// The only reader of process.env. Every variable of operator-api.md ("Running the service")
// plus a few limits of our own; parsed once, validated with one TypeBox schema, then frozen.
import os from 'node:os'
import path from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

const Port = Type.Integer({ minimum: 0, maximum: 65535 })
const Positive = Type.Integer({ minimum: 1 })

export const Config = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PORT: Type.Integer({ ...Port, default: 8080 }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  CLICKHOUSE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  /** ClickHouse cluster name: when set, migrations create Replicated + Distributed tables. */
  CLICKHOUSE_CLUSTER: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]+$' })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  ADMIN_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  /** Bearer token a scraper sends to GET /metrics; unset: only the admin token is accepted. */
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  SCHEDULER: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  SCHEDULER_INTERVAL_S: Type.Integer({ ...Positive, default: 60 }),
  EVENT_RETRY_DELAYS_MS: Type.Array(Type.Integer({ minimum: 0 }), {
    minItems: 4,
    maxItems: 4,
    default: [10_000, 60_000, 300_000, 1_800_000],
  }),
  EVENT_TIMEOUT_MS: Type.Integer({ ...Positive, default: 5000 }),
  EVENT_DISABLE_AFTER: Type.Integer({ ...Positive, default: 3 }),
  EVENT_BLOCK_PRIVATE_TARGETS: Type.Boolean({ default: false }),
  WORKERS: Type.Integer({ ...Positive, default: Math.max(1, os.availableParallelism()) }),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  // Our own limits (documented in the README).
  MAX_BODY_BYTES: Type.Integer({ ...Positive, default: 16 * 1024 * 1024 }),
  MAX_BATCH_ITEMS: Type.Integer({ ...Positive, default: 10_000 }),
  /** Evaluation time one webhook delivery's mapping may use in all (webhooks/map-delivery.ts). */
  WEBHOOK_MAPPING_BUDGET_MS: Type.Integer({ ...Positive, default: 2000 }),
  /** A repeat of one wM-Bus telegram within this window is a duplicate (ingest/telegram-repeats.ts); 0: off. */
  TELEGRAM_REPEAT_WINDOW_MS: Type.Integer({ minimum: 0, default: 600_000 }),
  /** Key quarantine (docs/decoders.md "Key diagnostics"): days a telegram is kept for replay. */
  QUARANTINE_RETENTION_DAYS: Type.Integer({ ...Positive, default: 7 }),
  /** Key quarantine: telegrams kept per meter (the newest by recorded_at). */
  QUARANTINE_PER_METER: Type.Integer({ ...Positive, default: 1000 }),
  /** MQTT ingest: lease of one subscription's connection; a dead owner is replaced after it. */
  MQTT_LEASE_S: Type.Integer({ ...Positive, default: 15 }),
  /**
   * With Redis: how long a meter's lease nobody else asked for stays with this instance
   * after its last turn, while it hears other instances' refusals (src/actors/lease-holds.ts).
   */
  METER_LEASE_KEEP_S: Type.Integer({ ...Positive, default: 1200 }),
  /** off: this instance never runs MQTT subscribers (others sharing Redis do). */
  MQTT_SUBSCRIBERS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /**
   * Linux: the nice value of chDB's threads and the decoder workers, so requests wait less
   * behind them for a core (src/thread-priority.ts); 0: off.
   */
  ENGINE_THREAD_NICE: Type.Integer({ minimum: 0, maximum: 19, default: 10 }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
})
export type Config = Static<typeof Config>

export class ConfigError extends Error {}

const numeric = new Set([
  'PORT',
  'SCHEDULER_INTERVAL_S',
  'EVENT_TIMEOUT_MS',
  'EVENT_DISABLE_AFTER',
  'WORKERS',
  'MAX_BODY_BYTES',
  'MAX_BATCH_ITEMS',
  'WEBHOOK_MAPPING_BUDGET_MS',
  'TELEGRAM_REPEAT_WINDOW_MS',
  'QUARANTINE_RETENTION_DAYS',
  'QUARANTINE_PER_METER',
  'MQTT_LEASE_S',
  'METER_LEASE_KEEP_S',
  'ENGINE_THREAD_NICE',
])

function coerce(name: string, raw: string): unknown {
  if (numeric.has(name)) return /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw
  if (name === 'EVENT_RETRY_DELAYS_MS')
    return raw.split(',').map((s) => (/^\d+$/.test(s.trim()) ? Number(s) : s))
  if (name === 'EVENT_BLOCK_PRIVATE_TARGETS')
    return ['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())
  return raw
}

/** Reads the environment once. Throws ConfigError naming the variable on a bad value. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
): Readonly<Config> {
  const input: Record<string, unknown> = {}
  for (const name of Object.keys(Config.properties)) {
    const raw = env[name]
    if (raw !== undefined && raw !== '') input[name] = coerce(name, raw)
  }
  const withDefaults = Value.Default(Config, input) as Record<string, unknown>
  const first = Value.Errors(Config, withDefaults).First()
  if (first) {
    // The value is never echoed: it may be a token or a URL with a password.
    const name = first.path.split('/')[1] ?? '?'
    throw new ConfigError(`invalid environment variable ${name}: ${first.message}`)
  }
  const config = withDefaults as Config
  // The spec's "growing delay": each retry waits strictly longer than the one before.
  const delays = config.EVENT_RETRY_DELAYS_MS
  if (delays.some((d, i) => i > 0 && d <= delays[i - 1]!))
    throw new ConfigError(
      'invalid environment variable EVENT_RETRY_DELAYS_MS: each delay must be longer than the one before',
    )
  config.DATA_DIR = path.resolve(config.DATA_DIR)
  return Object.freeze(config)
}
