// Entry point of `meterflow clickhouse-server`: parses its options, starts the server,
// prints its URL, and stops cleanly on SIGTERM or SIGINT.
import { startClickHouseServer } from './launcher.js'

export const USAGE = `meterflow clickhouse-server — a ClickHouse HTTP server from the bundled engine

Usage: meterflow clickhouse-server [--path DIR] [--port N] [--host ADDR]

  --path DIR   data directory, created if missing (default ./clickhouse)
  --port N     HTTP port (default 8123)
  --host ADDR  listen address (default 127.0.0.1)

Connect with CLICKHOUSE_URL=http://127.0.0.1:8123/meterflow (user default, no password).
SIGTERM or Ctrl-C stops it after the running queries.
`

export async function runClickHouseServer(opts: Record<string, string | true>): Promise<number> {
  for (const k of Object.keys(opts))
    if (!['path', 'port', 'host', 'help'].includes(k)) {
      process.stderr.write(`meterflow clickhouse-server: unknown option --${k}\n\n${USAGE}`)
      return 1
    }
  if (opts.help) {
    process.stdout.write(USAGE)
    return 0
  }
  const value = (k: string, d: string) => {
    const v = opts[k]
    if (v === true) throw new Error(`--${k} needs a value`)
    return v ?? d
  }
  let port: number
  let dir: string
  let host: string
  try {
    dir = value('path', './clickhouse')
    host = value('host', '127.0.0.1')
    const p = value('port', '8123')
    port = Number(p)
    if (!/^\d+$/.test(p) || port < 1 || port > 65535) throw new Error('--port must be 1-65535')
  } catch (err) {
    process.stderr.write(`meterflow clickhouse-server: ${(err as Error).message}\n`)
    return 1
  }
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
