// Prints the DDL Meterflow runs at start with CLICKHOUSE_CLUSTER set (every migration,
// Replicated*MergeTree `<table>_local` ON CLUSTER plus a Distributed `<table>`), so an
// operator can review or apply it by hand:
//   node --import tsx deploy/print-cluster-ddl.ts meterflow > deploy/cluster-ddl.sql
import { migrations, table } from '../src/store/migrations.js'

const cluster = process.argv[2] ?? 'meterflow'
const o = { cluster }
const T = "DateTime64(3, 'UTC')"
const out: string[] = [`-- Meterflow schema for CLICKHOUSE_CLUSTER=${cluster} (generated from src/store/migrations.ts)`]
for (const s of table(o, 'schema_migrations', `workspace_id UInt64 DEFAULT 0, version UInt32, name String, applied_at ${T}`, 'ReplacingMergeTree()', 'ORDER BY version'))
  out.push(s + ';')
for (const m of migrations) {
  out.push(`\n-- migration ${m.version}: ${m.name}`)
  for (const s of m.statements(o)) out.push(s.replace(/\s+/g, ' ') + ';')
}
process.stdout.write(out.join('\n') + '\n')
