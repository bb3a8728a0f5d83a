// SQL for data teams (docs/data-teams.md): a read-only ClickHouse user that sees one
// workspace's metering data and nothing else. Generated, not executed: the operator runs it
// as a ClickHouse user with access management (the service's own user usually has none).
// Granted: readings, meters (without wmbus_key, the meters' AES keys), meter_groups,
// status_reports, meter_exchanges, each filtered by a row policy on workspace_id. Never
// granted: tokens, users, webhook endpoints, MQTT subscriptions, event subscriptions.

/** Columns of `meters` a data team may read: all but `wmbus_key`. */
export const METER_COLUMNS = [
  'workspace_id',
  'id',
  'meter_identifier',
  'name',
  'unit',
  'display_unit',
  'group_id',
  'rollover_max',
  'expected_interval_minutes',
  'pulse_weight',
  'pulse_unit',
  'profile_key',
  'profile_version',
  'profile_needs_review',
  'lifecycle_state',
  'lifecycle_changed_at',
  'created_at',
  'deleted',
  'version',
]
export const DATA_TEAM_TABLES = [
  'readings',
  'meters',
  'meter_groups',
  'status_reports',
  'meter_exchanges',
]

export interface SqlAccessOptions {
  workspaceId: number
  database: string
  /** CLICKHOUSE_CLUSTER: statements ON CLUSTER, policies also on the `_local` tables. */
  cluster?: string
  user: string
  password: string
}

const ident = (s: string) => `\`${s.replace(/`/g, '')}\``
const str = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`

export function sqlAccessStatements(o: SqlAccessOptions): string[] {
  const on = o.cluster ? ` ON CLUSTER ${str(o.cluster)}` : ''
  const db = ident(o.database)
  const user = ident(o.user)
  const tables = DATA_TEAM_TABLES.flatMap((t) => (o.cluster ? [t, `${t}_local`] : [t]))
  const grants = tables.map((t) =>
    t.startsWith('meters')
      ? `GRANT${on} SELECT(${METER_COLUMNS.join(', ')}) ON ${db}.${ident(t)} TO ${user}`
      : `GRANT${on} SELECT ON ${db}.${ident(t)} TO ${user}`,
  )
  return [
    // readonly = 2: no writes or DDL, but clients such as Grafana may still set query settings.
    `CREATE USER IF NOT EXISTS ${user}${on} IDENTIFIED WITH sha256_password BY ${str(o.password)} SETTINGS readonly = 2`,
    ...grants,
    `CREATE ROW POLICY IF NOT EXISTS ${ident(`${o.user}_workspace`)}${on} ON ${tables
      .map((t) => `${db}.${ident(t)}`)
      .join(', ')} USING workspace_id = ${Math.trunc(o.workspaceId)} TO ${user}`,
  ]
}
