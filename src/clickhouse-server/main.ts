// Entry point of `meterflow clickhouse-server`: parses its options, starts the server,
// prints its URL, and stops cleanly on SIGTERM or SIGINT.
import { parseArgs } from 'node:util'
import { startClickHouseServer } from './launcher.js'

export const USAGE = `meterflow clickhouse-server — a ClickHouse HTTP server from the bundled engine

Usage: meterflow clickhouse-server [--path DIR] [--port N] [--host ADDR]

  --path DIR   data directory, created if missing (default ./clickhouse)
  --port N     HTTP port (default 8123)
  --host ADDR  listen address (default 127.0.0.1)

Connect with CLICKHOUSE_URL=http://127.0.0.1:8123/meterflow (user default, no password).
SIGTERM or Ctrl-C stops it after the running queries.
`

export async function runClickHouseServer(argv: string[]): Promise<number> {
  let values
  try {
    values = parseArgs({
      args: argv,
      options: {
        path: { type: 'string', default: './clickhouse' },
        port: { type: 'string', default: '8123' },
        host: { type: 'string', default: '127.0.0.1' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values
  } catch (err) {
    process.stderr.write(`meterflow clickhouse-server: ${(err as Error).message}\n\n${USAGE}`)
    return 1
  }
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  const port = Number(values.port)
  if (!/^\d+$/.test(values.port) || port < 1 || port > 65535) {
    process.stderr.write('meterflow clickhouse-server: --port must be 1-65535\n')
    return 1
  }
  const dir = values.path
  const host = values.host
  let server
  try {
    server = await startClickHouseServer({ path: dir, port, host })
  } catch (err) {
    process.stderr.write(`meterflow clickhouse-server: ${(err as Error).message}\n`)
    return 1
  }
  process.stdout.write(`clickhouse listening on ${server.url} (data in ${dir})\n`)
  const stop = () => void server.stop()
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  await server.stopped
  process.stdout.write('clickhouse stopped\n')
  return 0
}
