// Naive ingest ceiling: what a bare ingest service does with the same bodies and connections
// as Meterflow, in its own process. uWebSockets.js reads the body, JSON.parse, field checks
// (meter string, kind, finite value, parseable recorded_at), an in-memory identifier -> id
// map, and minimal rows written into a chDB ReplacingMergeTree with the readings sort key
// through one group-commit writer; the answer goes out after the INSERT. No auth, actors,
// idempotency, rollup or quality flags. argv[2]: "raw" JSON bodies (readings) only.
import fs from 'node:fs'
import uWS from 'uWebSockets.js'
import { ChdbSql } from '../../src/store/chdb.js'
import { GroupCommit } from '../../src/store/group-commit.js'
import { chTime } from '../../src/store/sql.js'
import { readBody } from './child-server.js'
import { freshDataDir } from './data-dirs.js'

const dir = freshDataDir('naive')
const sql = new ChdbSql(dir)
await sql.exec(
  `CREATE TABLE naive_readings (workspace_id UInt64, meter_id UInt64,
   kind Enum8('consumption' = 1, 'saldo' = 2), recorded_at DateTime64(3, 'UTC'), value Float64,
   unit LowCardinality(Nullable(String)), version UInt64)
   ENGINE = ReplacingMergeTree(version) PARTITION BY toYYYYMM(recorded_at)
   ORDER BY (workspace_id, meter_id, kind, recorded_at)`,
)
const writer = new GroupCommit(sql, 'naive_readings')
const ids = new Map<string, number>()
let version = 0

interface In {
  meter?: unknown
  kind?: unknown
  value?: unknown
  unit?: unknown
  recorded_at?: unknown
}

function rows(body: Buffer): { text: string; n: number } | string {
  const v = JSON.parse(body.toString('utf8')) as { readings?: In[] }
  if (!Array.isArray(v.readings)) return 'readings must be an array'
  let text = ''
  let n = 0
  for (const r of v.readings) {
    if (typeof r.meter !== 'string' || !r.meter) return 'meter'
    if (r.kind !== 'saldo' && r.kind !== 'consumption') return 'kind'
    if (typeof r.value !== 'number' || !Number.isFinite(r.value)) return 'value'
    const t = typeof r.recorded_at === 'string' ? Date.parse(r.recorded_at) : NaN
    if (!Number.isFinite(t)) return 'recorded_at'
    let id = ids.get(r.meter)
    if (id === undefined) ids.set(r.meter, (id = ids.size + 1))
    text += `{"workspace_id":1,"meter_id":${id},"kind":"${r.kind}","recorded_at":"${chTime(t)}","value":${r.value},"unit":${typeof r.unit === 'string' ? JSON.stringify(r.unit) : 'null'},"version":${++version}}\n`
    n++
  }
  return { text, n }
}

const app = uWS.App()
app.any('/*', (res) =>
  readBody(res, (body, aborted) => {
    const answer = (status: string, text: string) => {
      if (aborted()) return
      res.cork(() => {
        res.writeStatus(status)
        res.writeHeader('content-type', 'application/json')
        res.end(text)
      })
    }
    let r: ReturnType<typeof rows>
    try {
      r = rows(body)
    } catch {
      return answer('400 Bad Request', '{"error":"invalid JSON"}')
    }
    if (typeof r === 'string') return answer('422 Unprocessable Entity', `{"error":"${r}"}`)
    const n = r.n
    writer.write(r.text, n).then(
      () => answer('201 Created', `{"accepted":${n},"duplicates":0,"rejected":0}`),
      () => answer('500 Internal Server Error', '{"error":"insert failed"}'),
    )
  }),
)
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) process.exit(1)
  process.stdout.write(`listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
process.on('SIGTERM', () => {
  // The engine's background merges may still write into the directory: close it first.
  void writer
    .flush()
    .then(() => sql.close())
    .finally(() => {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5 })
      process.exit(0)
    })
})
