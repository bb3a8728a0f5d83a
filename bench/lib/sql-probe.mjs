// Where the store's time goes, per statement: preload into the Meterflow server with
//   NODE_OPTIONS="--import ./bench/lib/sql-probe.mjs" npm run bench -- --quick --scenario provision
// (NODE_OPTIONS reaches every process of the run; this does something only in a server's main
// thread). Each server writes bench/results/sql.<pid>.txt every second: calls, total wall ms
// and the statement's first 90 characters, slowest total first. Wall time includes waiting
// for a chDB session (a session runs one query at a time), which is what it is for: in
// session 6 it showed look-ups waiting 86-192 ms behind the delivery engine's scans.
// Plain JavaScript, never in production.
import fs from 'node:fs'
import path from 'node:path'
import { isMainThread } from 'node:worker_threads'

const root = path.resolve(import.meta.dirname, '../..')
const built = process.argv.some((a) => a.endsWith('dist/main.js'))
if (isMainThread && process.argv.some((a) => a.endsWith('src/main.ts')))
  console.error(
    'sql-probe: the server runs src/ through tsx; build dist/ (npm run build) to probe it',
  )
if (isMainThread && built) {
  const { ChdbSql } = await import(path.join(root, 'dist/store/chdb.js'))
  // A ClickHouse server's statements too (CLICKHOUSE_URL, `--clickhouse`, `scaleout`).
  const { ServerSql } = await import(path.join(root, 'dist/store/server.js'))
  const seen = new Map()
  const statement = (s) => s.replace(/\s+/g, ' ').slice(0, 90)
  for (const [Sql, method] of [ChdbSql, ServerSql].flatMap((c) =>
    ['query', 'exec', 'insert'].map((m) => [c, m]),
  )) {
    const original = Sql.prototype[method]
    if (!original) continue
    Sql.prototype[method] = async function (a, ...rest) {
      const t = performance.now()
      try {
        return await original.call(this, a, ...rest)
      } finally {
        const k = method === 'insert' ? `INSERT ${a}` : statement(a)
        const e = seen.get(k) ?? { n: 0, ms: 0 }
        e.n++
        e.ms += performance.now() - t
        seen.set(k, e)
      }
    }
  }
  const out = path.join(root, 'bench/results', `sql.${process.pid}.txt`)
  fs.mkdirSync(path.dirname(out), { recursive: true })
  setInterval(() => {
    const lines = [...seen]
      .sort((x, y) => y[1].ms - x[1].ms)
      .map(([k, v]) => `${v.n}\t${Math.round(v.ms)}\t${k}`)
    fs.writeFileSync(out, `calls\twall ms\tstatement\n${lines.join('\n')}\n`)
  }, 1000).unref()
}
