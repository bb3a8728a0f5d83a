// Versioned schema migrations, applied in order at start. A migration is a list of
// statements; `engine()` lets the same DDL build single-node tables or, with
// CLICKHOUSE_CLUSTER set, Replicated tables plus a Distributed table of the same name.
import { rollupFeedStatements, rollupRebuildStatements, rollupStatements } from './rollup.js'
import { ROLLUP_FEED, rollupFedApart } from './rollup-feed.js'
import { statusFeedStatements } from './status.js'
import { chTime, type SchemaOptions, type Sql } from './sql.js'

export type { SchemaOptions }

export interface Migration {
  version: number
  name: string
  statements: (o: SchemaOptions) => string[]
}

/**
 * CREATE TABLE for one logical table. Single node: `name` with `engine`. Cluster: a local
 * Replicated table `name_local` on every node and a Distributed `name` over it, so queries
 * and inserts use the same name either way.
 */
export function table(
  o: SchemaOptions,
  name: string,
  columns: string,
  engine: string,
  tail: string,
): string[] {
  if (!o.cluster)
    return [`CREATE TABLE IF NOT EXISTS ${name} (${columns}) ENGINE = ${engine} ${tail}`]
  const m = /^(\w+)\((.*)\)$/.exec(engine)!
  const args = m[2] ? `, ${m[2]}` : ''
  const replicated = `Replicated${m[1]}('/clickhouse/tables/{shard}/{database}/${name}', '{replica}'${args})`
  return [
    `CREATE TABLE IF NOT EXISTS ${name}_local ON CLUSTER '${o.cluster}' (${columns}) ENGINE = ${replicated} ${tail}`,
    `CREATE TABLE IF NOT EXISTS ${name} ON CLUSTER '${o.cluster}' AS ${name}_local ENGINE = Distributed('${o.cluster}', currentDatabase(), ${name}_local, cityHash64(workspace_id))`,
  ]
}

const T = "DateTime64(3, 'UTC')"
const RMT = 'ReplacingMergeTree(version)'

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'tenants, auth and master data',
    statements: (o) => [
      ...table(
        o,
        'workspaces',
        `workspace_id UInt64, name String, plan_meter_limit Nullable(UInt32), provision_cap_per_hour UInt32,
         retention_days Nullable(UInt32), created_at ${T}, version UInt64`,
        RMT,
        'ORDER BY workspace_id',
      ),
      ...table(
        o,
        'users',
        `workspace_id UInt64, id UInt64, email String, owner UInt8, permissions Array(String),
         created_at ${T}, version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'api_tokens',
        `workspace_id UInt64, id UInt64, user_id UInt64, name Nullable(String), token_hash String,
         scopes Array(String), expires_at Nullable(${T}), rate_limit_per_minute UInt32,
         revoked_at Nullable(${T}), created_at ${T}, version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'meter_groups',
        `workspace_id UInt64, id UInt64, name String, parent_id Nullable(UInt64), path String,
         deleted UInt8, version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'meters',
        `workspace_id UInt64, id UInt64, meter_identifier String, name Nullable(String),
         unit Nullable(String), display_unit Nullable(String), group_id Nullable(UInt64),
         rollover_max Nullable(Float64), expected_interval_minutes Nullable(UInt32),
         pulse_weight Nullable(Float64), pulse_unit Nullable(String),
         profile_key String, profile_version UInt32, profile_needs_review UInt8,
         lifecycle_state LowCardinality(String), lifecycle_changed_at Nullable(${T}),
         wmbus_key Nullable(String), created_at ${T}, deleted UInt8, version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'profiles',
        `workspace_id UInt64, key String, version UInt32, name String, kind LowCardinality(String),
         unit Nullable(String), decoder Nullable(String), status_map Nullable(String), created_at ${T}`,
        'ReplacingMergeTree()',
        'ORDER BY (workspace_id, key, version)',
      ),
      ...table(
        o,
        'meter_exchanges',
        `workspace_id UInt64, meter_id UInt64, id UInt64, exchanged_at ${T},
         old_final_value Nullable(Float64), new_initial_value Nullable(Float64), created_at ${T}`,
        'ReplacingMergeTree()',
        'ORDER BY (workspace_id, meter_id, id)',
      ),
    ],
  },
  {
    version: 2,
    name: 'readings and status reports',
    statements: (o) => [
      // Monthly partitions: an idempotency look-up of 1,000 keys took 19 ms this way against
      // 83–112 ms with one big partition (DESIGN.md). The sorting key is the reading identity,
      // so a replayed or re-versioned row replaces, never adds.
      ...table(
        o,
        'readings',
        `workspace_id UInt64, meter_id UInt64, kind Enum8('consumption' = 1, 'saldo' = 2),
         recorded_at ${T}, value Float64, unit LowCardinality(Nullable(String)),
         canonical_value Nullable(Float64), canonical_unit LowCardinality(Nullable(String)),
         quality_flags Array(LowCardinality(String)), raw_payload String CODEC(ZSTD(1)),
         ingested_at ${T}, version UInt64`,
        RMT,
        'PARTITION BY toYYYYMM(recorded_at) ORDER BY (workspace_id, meter_id, kind, recorded_at)',
      ),
      ...table(
        o,
        'status_reports',
        `workspace_id UInt64, meter_id UInt64, reported_at ${T}, raw_flags Array(String),
         statuses Array(LowCardinality(String)), version UInt64`,
        RMT,
        'PARTITION BY toYYYYMM(reported_at) ORDER BY (workspace_id, meter_id, reported_at)',
      ),
    ],
  },
  {
    version: 3,
    name: 'events, webhooks, alerts, imports, transfers, scheduler',
    statements: (o) => [
      ...table(
        o,
        'webhook_endpoints',
        `workspace_id UInt64, id String, name Nullable(String), token_hash String, enabled UInt8,
         mapping String, created_at ${T}, version UInt64`,
        RMT,
        'ORDER BY id',
      ),
      ...table(
        o,
        'event_subscriptions',
        `workspace_id UInt64, id UInt64, url String, events Array(String), enabled UInt8,
         signing_secret String, consecutive_failures UInt32, created_at ${T}, version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'event_deliveries',
        `workspace_id UInt64, id String, subscription_id UInt64, event LowCardinality(String),
         body String, status LowCardinality(String), attempts UInt32, last_status_code Nullable(UInt16),
         last_error Nullable(String), next_attempt_at Nullable(${T}), exhausted UInt8,
         created_at ${T}, version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'mails',
        `workspace_id UInt64, id UInt64, to String, subject String, body String, created_at ${T}`,
        'ReplacingMergeTree()',
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'alert_rules',
        `workspace_id UInt64, id UInt64, type LowCardinality(String), params String,
         created_at ${T}, deleted UInt8, version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'alerts',
        `workspace_id UInt64, id UInt64, rule_id UInt64, meter_id UInt64, state LowCardinality(String),
         opened_at ${T}, resolved_at Nullable(${T}), resolved_by Nullable(String), detail String,
         version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'imports',
        `workspace_id UInt64, id UInt64, status LowCardinality(String), accepted UInt64,
         duplicates UInt64, rejected UInt64, error Nullable(String), created_at ${T},
         finished_at Nullable(${T}), version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'transfers',
        `workspace_id UInt64, id UInt64, url String, cron String, group_id Nullable(UInt64),
         last_run_at Nullable(${T}), last_status Nullable(String), created_at ${T}, deleted UInt8,
         version UInt64`,
        RMT,
        'ORDER BY (workspace_id, id)',
      ),
      ...table(
        o,
        'scheduler_runs',
        `workspace_id UInt64 DEFAULT 0, ran_at ${T}, instance String, pruned UInt64,
         alerts_opened UInt64, alerts_resolved UInt64, transfers UInt64`,
        'MergeTree()',
        'ORDER BY ran_at',
      ),
    ],
  },
  {
    version: 4,
    name: 'hourly readings rollup, first version (superseded by 5)',
    statements: () => [],
  },
  {
    version: 5,
    name: 'hourly readings rollup (exact under versions and replays, docs/query.md)',
    statements: (o) => rollupStatements(o),
  },
  {
    version: 6,
    name: 'wM-Bus compact frame formats, shared by workers and instances',
    statements: (o) =>
      table(
        o,
        'wmbus_formats',
        `workspace_id UInt64, manufacturer UInt16, device_id UInt32, signature UInt16,
         format String, learned_at ${T}`,
        'ReplacingMergeTree(learned_at)',
        'ORDER BY (workspace_id, device_id, manufacturer, signature)',
      ),
  },
  {
    version: 7,
    name: 'MQTT ingest subscriptions (docs/mqtt.md)',
    statements: (o) =>
      table(
        o,
        'mqtt_subscriptions',
        `workspace_id UInt64, id UInt64, name Nullable(String), broker_url String,
         username Nullable(String), password Nullable(String), client_id String,
         topics Array(String), qos UInt8, mapping String, enabled UInt8, deleted UInt8,
         created_at ${T}, version UInt64`,
        'ReplacingMergeTree(version)',
        'ORDER BY (workspace_id, id)',
      ),
  },
  {
    version: 8,
    name: 'alert re-arming: a member-resolved alert waits for its condition to clear (docs/alerts.md)',
    statements: (o) =>
      table(
        o,
        'alert_rearm',
        `workspace_id UInt64, rule_id UInt64, meter_id UInt64, alert_id UInt64, waiting UInt8,
         version UInt64`,
        'ReplacingMergeTree(version)',
        'ORDER BY (workspace_id, rule_id, meter_id)',
      ),
  },
  {
    version: 9,
    name: 'wM-Bus key quarantine: telegrams kept until their key is stored (docs/decoders.md)',
    statements: (o) =>
      table(
        o,
        'wmbus_quarantine',
        `workspace_id UInt64, meter_id UInt64, identifier String, recorded_at ${T},
         recorded_at_text String, telegram String, reason String, received_at ${T}`,
        'ReplacingMergeTree(received_at)',
        'ORDER BY (workspace_id, meter_id, recorded_at, telegram)',
      ),
  },
  {
    version: 10,
    name: 'per-workspace retention of the wM-Bus key quarantine',
    statements: (o) => addColumn(o, 'workspaces', 'quarantine_retention_days Nullable(UInt32)'),
  },
  {
    version: 11,
    name: 'embedded engine: hourly rollup written apart from the readings INSERT (docs/query.md)',
    statements: (o) => rollupFeedStatements(o),
  },
  {
    version: 12,
    name: 'readings merge fewer, wider (merge_selector_base 10, docs/benchmarks.md)',
    // Every ingest INSERT is a small part, and the default selector (5) rewrote each row
    // often: merges took a quarter of the embedded server's CPU in the gateway profile,
    // a tenth at 10. The price is more parts per partition for reads (about 2× at most).
    statements: (o) => modifySetting(o, 'readings', 'merge_selector_base = 10'),
  },
  {
    version: 13,
    name: 'embedded engine: status reports carried by their readings rows (docs/query.md)',
    statements: (o) => statusFeedStatements(o),
  },
  {
    version: 14,
    name: 'event deliveries merge fewer, wider (merge_selector_base 10, docs/benchmarks.md)',
    // Every event is written twice (pending, then its attempt's result), in small parts
    // while a backlog is sent; their merges were a tenth of the server's CPU per event.
    statements: (o) => modifySetting(o, 'event_deliveries', 'merge_selector_base = 10'),
  },
  {
    version: 15,
    name: 'readings: units, flags and status codes as plain strings (docs/benchmarks.md)',
    // A LowCardinality column keeps a dictionary per part, built on every INSERT and
    // rebuilt by every merge. Our parts are small and these strings short and few, so the
    // dictionaries saved nothing on disk and cost chDB about a quarter of its CPU per
    // stored row (INSERT and merges, gateway-like rows).
    statements: (o) =>
      modifyColumns(o, 'readings', [
        'unit Nullable(String)',
        'canonical_unit Nullable(String)',
        'quality_flags Array(String)',
        ...(o.rollupFeed ? ['status_codes Array(String)'] : []),
      ]),
  },
  {
    version: 16,
    name: 'hourly rollup merges fewer, wider (merge_selector_base 10, docs/benchmarks.md)',
    // The rollup gets a part a second (rollup-feed.ts), and each merge re-reads and rewrites
    // every hour's bitmap of reading times: with the default selector that was about half
    // of the feed's CPU per reading. Reads aggregate across parts anyway (GROUP BY).
    statements: (o) => modifySetting(o, 'readings_hourly', 'merge_selector_base = 10'),
  },
  {
    version: 17,
    name: 'status reports: status codes as plain strings (docs/benchmarks.md)',
    // As migration 15 for readings. Every telegram carries a status report: its codes went
    // through a LowCardinality column twice (the feed's, status_reports'), a dictionary
    // built per block and rebuilt by every merge, for a list that is nearly always empty.
    statements: (o) => [
      ...modifyColumns(o, 'status_reports', ['statuses Array(String)']),
      ...(o.rollupFeed
        ? [`ALTER TABLE ${ROLLUP_FEED} MODIFY COLUMN status_codes Array(String)`]
        : []),
    ],
  },
  {
    version: 18,
    name: 'hourly rollup rebuilt with compact reading identities (docs/query.md)',
    statements: (o) => [
      ...rollupRebuildStatements(o),
      // The table is new: migration 16's setting again.
      ...modifySetting(o, 'readings_hourly', 'merge_selector_base = 10'),
    ],
  },
]

/**
 * ALTER TABLE … ADD COLUMN for one logical table: on a cluster, to the local table on every
 * shard and to the Distributed table over it.
 */
export function addColumn(o: SchemaOptions, name: string, column: string): string[] {
  if (!o.cluster) return [`ALTER TABLE ${name} ADD COLUMN IF NOT EXISTS ${column}`]
  return [`${name}_local`, name].map(
    (t) => `ALTER TABLE ${t} ON CLUSTER '${o.cluster}' ADD COLUMN IF NOT EXISTS ${column}`,
  )
}

/**
 * ALTER TABLE … MODIFY COLUMN (a new type) for one logical table: on a cluster, the local
 * table on every shard and the Distributed table over it. Stored parts are rewritten by the
 * ALTER's mutation.
 */
export function modifyColumns(o: SchemaOptions, name: string, columns: string[]): string[] {
  const modify = columns.map((c) => `MODIFY COLUMN ${c}`).join(', ')
  if (!o.cluster) return [`ALTER TABLE ${name} ${modify}`]
  return [`${name}_local`, name].map((t) => `ALTER TABLE ${t} ON CLUSTER '${o.cluster}' ${modify}`)
}

/** ALTER TABLE … MODIFY SETTING for one logical table: on a cluster, its local tables. */
export function modifySetting(o: SchemaOptions, name: string, setting: string): string[] {
  if (!o.cluster) return [`ALTER TABLE ${name} MODIFY SETTING ${setting}`]
  return [`ALTER TABLE ${name}_local ON CLUSTER '${o.cluster}' MODIFY SETTING ${setting}`]
}

/** The table that records applied migrations; created before any migration runs. */
export function schemaMigrationsStatements(o: SchemaOptions): string[] {
  return table(
    o,
    'schema_migrations',
    `workspace_id UInt64 DEFAULT 0, version UInt32, name String, applied_at ${T}`,
    'ReplacingMergeTree()',
    'ORDER BY version',
  )
}

/**
 * Applies every migration of `list` (all of them unless told) not yet recorded, in order.
 * Callers hold the migration lock.
 */
export async function migrate(
  sql: Sql,
  schema: SchemaOptions = {},
  list: readonly Migration[] = migrations,
): Promise<number[]> {
  const o: SchemaOptions = { ...schema, rollupFeed: rollupFedApart(sql) }
  for (const s of schemaMigrationsStatements(o)) await sql.exec(s)
  const done = new Set(
    (await sql.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) =>
      Number(r.version),
    ),
  )
  const applied: number[] = []
  for (const m of list) {
    if (done.has(m.version)) continue
    for (const s of m.statements(o)) await sql.exec(s)
    await sql.insert(
      'schema_migrations',
      JSON.stringify({ version: m.version, name: m.name, applied_at: chTime(Date.now()) }),
    )
    applied.push(m.version)
  }
  return applied
}
