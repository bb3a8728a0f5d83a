// Prints the DDL Meterflow runs at start with CLICKHOUSE_CLUSTER set (every migration,
// Replicated*MergeTree `<table>_local` ON CLUSTER plus a Distributed `<table>`), so an
// operator can review or apply it by hand:
//   node --import tsx deploy/print-cluster-ddl.ts meterflow > deploy/cluster-ddl.sql
// test/store/cluster-ddl.test.ts fails when the committed file differs from this output.
import { clusterDdl } from '../src/store/cluster.js'

process.stdout.write(clusterDdl(process.argv[2] ?? 'meterflow'))
