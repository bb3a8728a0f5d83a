// What changes when the store is a ClickHouse cluster (CLICKHOUSE_CLUSTER): the DDL an
// operator reviews, and the statements a Distributed table cannot take.
import { migrations, schemaMigrationsStatements } from './migrations.js'

/**
 * Every statement Meterflow runs at start with CLICKHOUSE_CLUSTER=`cluster`, in order, as
 * one reviewable SQL script (deploy/cluster-ddl.sql is this for `meterflow`).
 */
export function clusterDdl(cluster: string): string {
  const o = { cluster }
  const out = [
    `-- Meterflow schema for CLICKHOUSE_CLUSTER=${cluster} (generated from src/store/migrations.ts)`,
  ]
  for (const s of schemaMigrationsStatements(o)) out.push(oneLine(s))
  for (const m of migrations) {
    out.push(`\n-- migration ${m.version}: ${m.name}`)
    for (const s of m.statements(o)) out.push(oneLine(s))
  }
  return out.join('\n') + '\n'
}

/** The statements of a script as clusterDdl writes it (one per line, `;`-terminated). */
export function ddlStatements(script: string): string[] {
  return script
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('--'))
    .map((l) => l.replace(/;$/, ''))
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim() + ';'

const DELETE_RE = /^\s*DELETE\s+FROM\s+(\w+)\s+WHERE\b/i

/**
 * A lightweight DELETE cannot run on a Distributed table ("not supported"): on a cluster it
 * goes to the `<table>_local` tables of every shard, where the rows are. Other statements
 * pass unchanged.
 */
export function forCluster(statement: string, cluster: string): string {
  return statement.replace(
    DELETE_RE,
    (_m, table: string) => `DELETE FROM ${table}_local ON CLUSTER '${cluster}' WHERE`,
  )
}
