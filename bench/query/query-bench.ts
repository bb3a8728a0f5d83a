// Query bench (issue 5): a year of 15-minute readings for 1,000 meters (35 M rows, generated
// inside ClickHouse with INSERT … SELECT FROM numbers()), then the latency of
//   - daily aggregate, 1 meter × 1 year          (target ≤ 20 ms)
//   - daily aggregate, 1,000 meters × 1 month    (target ≤ 100 ms)
//   - derive=consumption, 1 meter × 1 year       (saldo meter, 35 k readings)
// and the same 1,000 × month aggregate after re-versioning some readings (dirty hours).
// Runs the very functions GET /readings uses, against embedded chDB.
// Standalone: node --import tsx bench/query/query-bench.ts [--quick]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { MemoryCoord } from '../../src/coord/memory.js'
import { derivedConsumption } from '../../src/query/consumption.js'
import { aggregateReadings } from '../../src/store/readings-buckets.js'
import type { Meter } from '../../src/store/meter-row.js'
import { withReadingsView } from '../../src/store/rollup.js'
import { Store } from '../../src/store/store.js'

const WS = 1
const STEP_S = 900

function stats(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b)
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!
  return {
    runs: s.length,
    p50_ms: +q(0.5).toFixed(2),
    p90_ms: +q(0.9).toFixed(2),
    min_ms: +s[0]!.toFixed(2),
  }
}

async function time(runs: number, f: () => Promise<unknown>) {
  await f() // warm
  const ms: number[] = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    await f()
    ms.push(performance.now() - t)
  }
  return stats(ms)
}

// Named: readings has columns a seed leaves at their defaults (the status report a row carries).
const COLUMNS =
  '(workspace_id, meter_id, kind, recorded_at, value, unit, canonical_value, canonical_unit, quality_flags, raw_payload, ingested_at, version)'

export async function runQueryBench({ quick }: { quick: boolean }): Promise<object> {
  const meters = quick ? 100 : 1000
  const days = quick ? 62 : 365
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-query-bench-'))
  const store = await Store.open(
    { DATA_DIR: dir, CLICKHOUSE_URL: undefined, CLICKHOUSE_CLUSTER: undefined } as any,
    new MemoryCoord(),
  )
  const sql = store.sql
  try {
    const start = Date.UTC(2025, 0, 1) / 1000
    const perMeter = (days * 86400) / STEP_S
    const total = perMeter * meters
    const t0 = performance.now()
    // Consumption readings of meters 1..N: 0.1–0.4 kWh per 15 minutes, deterministic.
    const chunk = 5_000_000
    // Seeds written in SQL are rolled up by a view while they run (src/store/rollup.ts).
    await withReadingsView(sql, async () => {
      for (let off = 0; off < total; off += chunk) {
        const n = Math.min(chunk, total - off)
        await sql.exec(
          `INSERT INTO readings ${COLUMNS} SELECT ${WS}, 1 + (number % ${meters}), 'consumption',
           toDateTime64(${start} + intDiv(number, ${meters}) * ${STEP_S}, 3, 'UTC'),
           v, 'kwh', v, 'kwh', [], '{}', now64(3), 1
         FROM (SELECT number, 0.1 + (cityHash64(number) % 4) / 10 AS v FROM numbers(${off}, ${n}))
         SETTINGS max_insert_threads = 2`,
        )
      }
      // One saldo meter (id 5000) for derive: rising register with a gap each day.
      await sql.exec(
        `INSERT INTO readings ${COLUMNS} SELECT ${WS}, 5000, 'saldo', toDateTime64(${start} + number * ${STEP_S}, 3, 'UTC'),
         number * 0.25, 'kwh', number * 0.25, 'kwh', [], '{}', now64(3), 1
       FROM numbers(${perMeter}) WHERE number % 96 != 50`,
      )
    })
    const seedMs = performance.now() - t0
    const t1 = performance.now()
    await sql.exec('OPTIMIZE TABLE readings_hourly FINAL')
    const optimizeMs = performance.now() - t1
    const [{ c }] = await sql.query<{ c: string }>('SELECT count() AS c FROM readings')

    const ids = Array.from({ length: meters }, (_, i) => i + 1)
    const yearFrom = start * 1000
    const yearTo = (start + days * 86400) * 1000 - 1
    const monthFrom = Date.UTC(2025, 0, 1)
    const monthTo = Date.UTC(2025, 1, 1) - 1
    const page = { limit: 1000, offset: 0 }
    const runs = quick ? 5 : 15

    const oneMeterYear = await time(runs, () =>
      aggregateReadings(
        sql,
        { ws: WS, meterIds: [1], kind: 'consumption', from: yearFrom, to: yearTo },
        'daily',
        null,
        page,
      ),
    )
    const oneMeterYearBerlin = await time(runs, () =>
      aggregateReadings(
        sql,
        { ws: WS, meterIds: [1], kind: 'consumption', from: yearFrom, to: yearTo },
        'daily',
        'Europe/Berlin',
        page,
      ),
    )
    const groupMonth = await time(runs, () =>
      aggregateReadings(
        sql,
        { ws: WS, meterIds: ids, kind: 'consumption', from: monthFrom, to: monthTo },
        'daily',
        null,
        page,
      ),
    )
    const oneMeterYearKathmandu = await time(quick ? 2 : 5, () =>
      aggregateReadings(
        sql,
        { ws: WS, meterIds: [1], kind: 'consumption', from: yearFrom, to: yearTo },
        'daily',
        'Asia/Kathmandu',
        page,
      ),
    )
    const saldo: Meter = {
      id: 5000,
      workspace_id: WS,
      meter_identifier: 'saldo',
      name: null,
      unit: 'kwh',
      display_unit: null,
      group_id: null,
      rollover_max: null,
      expected_interval_minutes: 15,
      pulse_weight: null,
      pulse_unit: null,
      profile_key: 'generic',
      profile_version: 1,
      profile_needs_review: false,
      lifecycle_state: 'active',
      lifecycle_changed_at: null,
      wmbus_key: null,
      created_at: new Date().toISOString(),
    }
    let derivedRows = 0
    const deriveYear = await time(quick ? 3 : 5, async () => {
      derivedRows = (await derivedConsumption(sql, saldo, yearFrom, yearTo, null)).length
    })
    const deriveYearLinear = await time(quick ? 3 : 5, () =>
      derivedConsumption(sql, saldo, yearFrom, yearTo, 'linear'),
    )

    // Re-version 0.1 % of January's readings (quality flags changed): those hours turn dirty.
    await withReadingsView(sql, () =>
      sql.exec(
        `INSERT INTO readings ${COLUMNS} SELECT workspace_id, meter_id, kind, recorded_at, value, unit, canonical_value,
           canonical_unit, ['implausible_rate'], raw_payload, ingested_at, 2
         FROM readings WHERE workspace_id = ${WS} AND recorded_at < toDateTime64(${monthTo / 1000}, 3, 'UTC')
           AND cityHash64(meter_id, recorded_at) % 1000 = 0`,
      ),
    )
    let dirtyHours = 0
    const groupMonthDirty = await time(runs, async () => {
      dirtyHours = (
        await aggregateReadings(
          sql,
          { ws: WS, meterIds: ids, kind: 'consumption', from: monthFrom, to: monthTo },
          'daily',
          null,
          page,
        )
      ).dirtyHours
    })
    return {
      rows: Number(c),
      meters,
      days,
      seed_s: +(seedMs / 1000).toFixed(1),
      optimize_rollup_s: +(optimizeMs / 1000).toFixed(1),
      daily_1_meter_year: { ...oneMeterYear, target_ms: 20 },
      daily_1_meter_year_berlin: oneMeterYearBerlin,
      daily_1_meter_year_kathmandu_raw_path: oneMeterYearKathmandu,
      daily_group_month: { ...groupMonth, target_ms: 100 },
      daily_group_month_0_1pct_reversioned: { ...groupMonthDirty, dirty_hours: dirtyHours },
      derive_1_meter_year: { ...deriveYear, rows: derivedRows },
      derive_1_meter_year_linear: deriveYearLinear,
    }
  } finally {
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const out = await runQueryBench({ quick: process.argv.includes('--quick') })
  console.log(JSON.stringify(out, null, 2))
}
