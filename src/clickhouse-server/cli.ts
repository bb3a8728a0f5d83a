// Runs `meterflow clickhouse-server` from source (tests, `node --import tsx`); the
// installed command reaches the same function through bin/meterflow.js and dist/.
import { runClickHouseServer } from './main.js'

process.exitCode = await runClickHouseServer(process.argv.slice(2))
