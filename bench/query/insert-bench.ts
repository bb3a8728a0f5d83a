// Storage-only insert throughput with and without the hourly rollup's insert-path cost:
// a fresh chDB directory, migrate(), then one JSONEachRow INSERT at a time into `readings`
// through ChdbSql (rows shaped like the meter actor's, a lane of meters per body), alternating
// variants in rounds so that machine noise hits both alike.
// node --import tsx bench/query/insert-bench.ts [--sizes 1000,5000] [--seconds 4] [--rounds 3]
//   [--variants current,none]   current = readings plus the rollup feed (src/store/rollup-feed.ts,
//   written before the clock stops); none = readings alone (no rollup at all)
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ChdbSql } from '../../src/store/chdb.js'
import { migrate } from '../../src/store/migrations.js'
import { insertReadings, rollupCurrent } from '../../src/store/rollup-feed.js'
import { readingRowsWriter } from '../lib/reading-rows.js'

const arg = (k: string, d: string) => {
  const i = process.argv.indexOf(`--${k}`)
  return i > 0 ? process.argv[i + 1]! : d
}
const sizes = arg('sizes', '1000,5000').split(',').map(Number)
const seconds = Number(arg('seconds', '4'))
const rounds = Number(arg('rounds', '3'))
const variants = arg('variants', 'current,none').split(',')
const lane = 1000

const body = readingRowsWriter(lane)

const EXPERIMENTS: Record<string, string[]> = {
  nobitmap: [
    `CREATE TABLE x (workspace_id UInt64, meter_id UInt64, kind Enum8('consumption' = 1, 'saldo' = 2), bucket DateTime('UTC'), rows SimpleAggregateFunction(sum, UInt64), cnt SimpleAggregateFunction(sum, UInt64), total SimpleAggregateFunction(sum, Float64), mn SimpleAggregateFunction(min, Nullable(Float64)), mx SimpleAggregateFunction(max, Nullable(Float64))) ENGINE = AggregatingMergeTree PARTITION BY toYYYYMM(bucket) ORDER BY (workspace_id, meter_id, kind, bucket)`,
    `CREATE MATERIALIZED VIEW x_mv TO x AS SELECT workspace_id, meter_id, kind, toStartOfHour(recorded_at) AS bucket, toUInt64(count()) AS rows, toUInt64(count(canonical_value)) AS cnt, sum(ifNull(canonical_value, 0)) AS total, min(canonical_value) AS mn, max(canonical_value) AS mx FROM readings GROUP BY workspace_id, meter_id, kind, bucket`,
  ],
  countonly: [
    `CREATE TABLE x (workspace_id UInt64, meter_id UInt64, kind Enum8('consumption' = 1, 'saldo' = 2), bucket DateTime('UTC'), rows SimpleAggregateFunction(sum, UInt64)) ENGINE = AggregatingMergeTree PARTITION BY toYYYYMM(bucket) ORDER BY (workspace_id, meter_id, kind, bucket)`,
    `CREATE MATERIALIZED VIEW x_mv TO x AS SELECT workspace_id, meter_id, kind, toStartOfHour(recorded_at) AS bucket, toUInt64(count()) AS rows FROM readings GROUP BY workspace_id, meter_id, kind, bucket`,
  ],
  nogroup: [
    `CREATE TABLE x (workspace_id UInt64, meter_id UInt64, kind Enum8('consumption' = 1, 'saldo' = 2), recorded_at DateTime64(3, 'UTC')) ENGINE = MergeTree PARTITION BY toYYYYMM(recorded_at) ORDER BY (workspace_id, meter_id, kind, recorded_at)`,
    `CREATE MATERIALIZED VIEW x_mv TO x AS SELECT workspace_id, meter_id, kind, recorded_at FROM readings`,
  ],
}

async function open(variant: string): Promise<{ sql: ChdbSql; dir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-insert-bench-'))
  const sql = new ChdbSql(dir)
  await migrate(sql, {})
  const exp = EXPERIMENTS[variant]
  if (exp) {
    await sql.exec('DROP VIEW IF EXISTS readings_hourly_mv')
    for (const s of exp) await sql.exec(s)
  }
  return { sql, dir }
}

// chDB allows one data directory per process: each (round, variant) runs in a child process.
if (process.argv.includes('--child')) {
  const v = arg('child', 'current')
  const { sql, dir } = await open(v)
  const res: Record<string, number> = {}
  for (const size of sizes) {
    const count = Math.max(4, Math.min(200, Math.ceil((seconds * 100_000) / size)))
    const ready = Array.from({ length: count }, () => body(size))
    const insert = (rows: string) =>
      v === 'current' ? insertReadings(sql, rows) : sql.insert('readings', rows)
    await insert(ready[0]!) // warm
    await rollupCurrent(sql)
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    let n = 0
    while (performance.now() - t0 < seconds * 1000 && n < ready.length - 1)
      await insert(ready[1 + n++]!)
    await rollupCurrent(sql)
    res[size] = Math.round((n * size) / ((performance.now() - t0) / 1000))
    const c = process.cpuUsage(c0)
    res[`cpu${size}`] = +((c.user + c.system) / 1000 / ((n * size) / 1000)).toFixed(1)
  }
  process.stdout.write(JSON.stringify(res) + '\n')
  await sql.close()
  fs.rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}

const out: Record<string, Record<number, number[]>> = {}
const cpu: Record<string, Record<number, number[]>> = {}
for (let r = 0; r < rounds; r++)
  for (const v of variants) {
    const args = [
      '--import',
      'tsx',
      process.argv[1]!,
      '--child',
      v,
      '--sizes',
      sizes.join(','),
      '--seconds',
      String(seconds),
    ]
    const res = JSON.parse(
      execFileSync(process.execPath, args, { encoding: 'utf8' }).trim().split('\n').pop()!,
    )
    for (const size of sizes) {
      ;((out[v] ??= {})[size] ??= []).push(res[size])
      ;((cpu[v] ??= {})[size] ??= []).push(res[`cpu${size}`])
    }
  }
for (const v of variants)
  for (const size of sizes) {
    const xs = out[v]![size]!
    const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
    const cs = cpu[v]![size]!
    console.log(
      `${v.padEnd(10)} ${String(size).padStart(6)} rows/INSERT  median ${med(xs)} rows/s  CPU ${med(cs)} ms/1k rows   runs ${xs.join(' ')} | cpu ${cs.join(' ')}`,
    )
  }
