// The cluster DDL (CLICKHOUSE_CLUSTER) cannot run here: ON CLUSTER and Replicated tables
// need Keeper and remote_servers, which clickhouse-local does not have. What can be checked
// without them is checked: the committed deploy/cluster-ddl.sql is what the migrations
// generate, the engine parses every statement (EXPLAIN AST on the real ClickHouse 26
// engine of the chdb package), every table of the single-node schema has its local and
// Distributed pair, and deletes are sent to the shards' local tables.
import { readFileSync } from 'node:fs'
import { query } from 'chdb'
import t from 'tap'
import { clusterDdl, ddlStatements, forCluster } from '../../src/store/cluster.js'
import { migrations, schemaMigrationsStatements } from '../../src/store/migrations.js'

const script = clusterDdl('meterflow')
const statements = ddlStatements(script)

t.test('deploy/cluster-ddl.sql is the DDL the migrations generate', async (t) => {
  const committed = readFileSync(new URL('../../deploy/cluster-ddl.sql', import.meta.url), 'utf8')
  t.equal(
    committed,
    script,
    'regenerate: node --import tsx deploy/print-cluster-ddl.ts meterflow > deploy/cluster-ddl.sql',
  )
})

t.test('the engine parses every cluster statement', async (t) => {
  t.ok(statements.length > 40, `${statements.length} statements`)
  for (const s of statements) {
    let ast = ''
    try {
      ast = query(`EXPLAIN AST ${s}`, 'TSVRaw')
    } catch (e) {
      t.fail(`${s.slice(0, 80)}…: ${(e as Error).message}`)
      continue
    }
    t.match(ast, /^(CreateQuery|DropQuery|InsertQuery|AlterQuery)/, s.slice(0, 70))
  }
})

t.test('every single-node table has a Replicated local table and a Distributed one', async (t) => {
  const single = [...schemaMigrationsStatements({}), ...migrations.flatMap((m) => m.statements({}))]
  const created = single
    .map((s) => /^CREATE TABLE IF NOT EXISTS (\w+) \(.*\) ENGINE = (\w+)/s.exec(s))
    .filter((m) => m !== null)
  t.ok(created.length >= 20, `${created.length} tables`)
  for (const [, name, engine] of created) {
    const local = statements.find((s) =>
      s.startsWith(`CREATE TABLE IF NOT EXISTS ${name}_local ON CLUSTER 'meterflow'`),
    )
    t.match(
      local,
      new RegExp(
        `ENGINE = Replicated${engine}\\('/clickhouse/tables/\\{shard\\}/\\{database\\}/${name}'`,
      ),
      `${name}_local`,
    )
    t.ok(
      statements.includes(
        `CREATE TABLE IF NOT EXISTS ${name} ON CLUSTER 'meterflow' AS ${name}_local ENGINE = Distributed('meterflow', currentDatabase(), ${name}_local, cityHash64(workspace_id))`,
      ),
      `${name} is Distributed over ${name}_local, sharded by workspace`,
    )
  }
  t.match(script, /MATERIALIZED VIEW [^;]* TO readings_hourly_local AS [^;]* FROM readings_local /)
})

t.test('deletes go to the local tables on every shard', async (t) => {
  const del = 'DELETE FROM readings WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}'
  const out = forCluster(del, 'meterflow')
  t.equal(
    out,
    "DELETE FROM readings_local ON CLUSTER 'meterflow' WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}",
  )
  t.match(query(`EXPLAIN AST ${out.replace(/\{\w+:UInt64\}/g, '1')}`, 'TSVRaw'), /^DeleteQuery/)
  const select = 'SELECT count() FROM readings WHERE workspace_id = 1'
  t.equal(forCluster(select, 'meterflow'), select, 'other statements pass unchanged')
})
