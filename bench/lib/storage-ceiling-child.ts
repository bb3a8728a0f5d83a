// Storage ceiling: in its own process, a fresh chDB directory with Meterflow's migrations,
// then INSERTs of rows shaped exactly like the meter actor's, written by the same
// `writeReadingRow` and inserted with the same options as the readings writer (src/store/
// store.ts), one INSERT at a time like the writer. Bodies are built before the clock
// starts: this is chDB's cost alone. argv: JSON {sizes, seconds, meters}. Prints one JSON line.
import fs from 'node:fs'
import { ChdbSql } from '../../src/store/chdb.js'
import { migrate } from '../../src/store/migrations.js'
import { readingsColumns } from '../../src/store/reading-row.js'
import { rollupCurrent, rollupFeed } from '../../src/store/rollup-feed.js'
import { freshDataDir } from './data-dirs.js'
import { cpuMs } from './proc.js'
import { readingBodiesWriter } from './reading-rows.js'

const {
  sizes,
  seconds,
  meters: lane,
  noRollup = [],
} = JSON.parse(process.argv[2]!) as {
  sizes: number[]
  seconds: number
  meters: number
  /** sizes measured again with readings alone, no rollup fed (what the rollup costs) */
  noRollup?: number[]
}
const dir = freshDataDir('storage')
const sql = new ChdbSql(dir)
await migrate(sql, {})

const body = readingBodiesWriter(lane)
const insertOptions = { collapseInMerges: true, columns: readingsColumns(true) }

const results: {
  rollup: boolean
  rows: number
  inserts: number
  rowsPerS: number
  msPerInsert: number
  cpuMsPer1k: number
}[] = []
async function measure(size: number, rollup: boolean) {
  const ready: { body: Buffer; feed: Buffer }[] = []
  // (At most ~150 k rows/s worth: building bodies is slow; a faster chDB just ends early.)
  const count = Math.max(4, Math.min(400, Math.ceil((seconds * 150_000) / size)))
  for (let i = 0; i < count; i++) ready.push(body(size))
  // With the rollup: the path of the group-commit writer, the rollup written apart
  // (src/store/rollup-feed.ts) and done before the clock stops.
  const insert = async (rows: { body: Buffer; feed: Buffer }) => {
    await sql.insert('readings', rows.body, insertOptions)
    if (rollup) rollupFeed(sql)!.addRows(rows.feed)
  }
  await insert(ready[0]!) // warm
  await rollupCurrent(sql)
  const c0 = cpuMs(process.pid)
  const t0 = performance.now()
  let inserts = 0
  while (performance.now() - t0 < seconds * 1000 && inserts < ready.length - 1)
    await insert(ready[1 + inserts++]!)
  await rollupCurrent(sql)
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
for (const size of noRollup) await measure(size, false)
const peak = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'latin1'))
process.stdout.write(
  JSON.stringify({ results, peakRssMiB: peak ? Number(peak[1]) / 1024 : NaN }) + '\n',
)
await sql.close()
fs.rmSync(dir, { recursive: true, force: true })
process.exit(0)
