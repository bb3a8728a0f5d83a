// Storage ceiling: in its own process, a fresh chDB directory with Meterflow's migrations,
// then INSERTs of JSONEachRow rows shaped exactly like the meter actor's (src/actors/
// meter-actor.ts) through the same ChdbSql.insertJsonEachRow the group-commit writer calls,
// one INSERT at a time like the writer. Bodies are built before the clock starts: this is
// chDB's cost alone. argv: JSON {sizes, seconds, meters}. Prints one JSON line.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ChdbSql } from '../../src/store/chdb.js'
import { migrate } from '../../src/store/migrations.js'
import { cpuMs } from './proc.js'

const {
  sizes,
  seconds,
  meters: lane,
  noRollup = [],
} = JSON.parse(process.argv[2]!) as {
  sizes: number[]
  seconds: number
  meters: number
  /** sizes measured again after dropping the hourly rollup view (what the view costs) */
  noRollup?: number[]
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-bench-storage-'))
const sql = new ChdbSql(dir)
await migrate(sql, {})

const pad = (n: number) => String(n).padStart(2, '0')
function chTime(ms: number): string {
  const d = new Date(ms)
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${String(d.getUTCMilliseconds()).padStart(3, '0')}`
}

let version = Date.now() * 1000
let step = 0
const start = Date.UTC(2026, 0, 1)
// `meters` meters per body (a lane's), a rising saldo register, as the generic ingest scenario sends.
function body(rows: number): string {
  const meters = Math.min(rows, lane)
  let out = ''
  const now = chTime(Date.now())
  for (let k = 0; k < rows; k++) {
    const m = k % meters
    if (m === 0) step++
    const value = step * 0.25
    const at = new Date(start + step * 60_000).toISOString()
    // Shape A keeps the whole item as its raw payload (src/ingest/prepare.ts).
    const raw = JSON.stringify({
      meter: `g0-${m}`,
      kind: 'saldo',
      value,
      unit: 'kwh',
      recorded_at: at,
    })
    out +=
      JSON.stringify({
        workspace_id: 1,
        meter_id: 1 + m,
        kind: 'saldo',
        recorded_at: chTime(start + step * 60_000),
        value,
        unit: 'kwh',
        canonical_value: value,
        canonical_unit: 'kwh',
        quality_flags: [],
        raw_payload: raw,
        ingested_at: now,
        version: version++,
      }) + '\n'
  }
  return out
}

const results: {
  rollup: boolean
  rows: number
  inserts: number
  rowsPerS: number
  msPerInsert: number
  cpuMsPer1k: number
}[] = []
async function measure(size: number, rollup: boolean) {
  const ready: string[] = []
  // (At most ~150 k rows/s worth: building bodies is slow; a faster chDB just ends early.)
  const count = Math.max(4, Math.min(400, Math.ceil((seconds * 150_000) / size)))
  for (let i = 0; i < count; i++) ready.push(body(size))
  await sql.insertJsonEachRow('readings', ready[0]!) // warm
  const c0 = cpuMs(process.pid)
  const t0 = performance.now()
  let inserts = 0
  while (performance.now() - t0 < seconds * 1000 && inserts < ready.length - 1)
    await sql.insertJsonEachRow('readings', ready[1 + inserts++]!)
  const ms = performance.now() - t0
  const cpu = cpuMs(process.pid) - c0
  results.push({
    rollup,
    rows: size,
    inserts,
    rowsPerS: (inserts * size) / (ms / 1000),
    msPerInsert: ms / inserts,
    cpuMsPer1k: (cpu / (inserts * size)) * 1000,
  })
}
for (const size of sizes) await measure(size, true)
if (noRollup.length) {
  await sql.exec('DROP VIEW IF EXISTS readings_hourly_mv')
  for (const size of noRollup) await measure(size, false)
}
const peak = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'latin1'))
process.stdout.write(
  JSON.stringify({ results, peakRssMiB: peak ? Number(peak[1]) / 1024 : NaN }) + '\n',
)
await sql.close()
fs.rmSync(dir, { recursive: true, force: true })
process.exit(0)
