// Scenario 2, storage ceiling: chDB alone (bench/lib/storage-ceiling-child.ts in its own
// process) inserting generic-ingest rows one INSERT at a time, at the insert sizes the
// group-commit writer actually produced in the ingest runs (from the server probe), plus
// fixed sizes so the curve is visible.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Ctx } from '../lib/context.js'
import { round, type Row, type ScenarioResult } from '../lib/report.js'
import { ROOT } from '../lib/server.js'
import { metersFor } from './ingest-common.js'

const run = promisify(execFile)

export async function storageCeiling(ctx: Ctx): Promise<ScenarioResult> {
  const fixed = ctx.tiny ? [1000] : ctx.quick ? [1000, 5000] : [1000, 5000, 10_000, 20_000, 50_000]
  const observed = ctx.shared.insertSizes.filter((s) => s >= 50)
  const sizes = [
    ...new Set([...fixed, ...observed.map((s) => Math.round(s / 100) * 100 || s)]),
  ].sort((a, b) => a - b)
  const seconds = ctx.tiny ? 1 : ctx.quick ? 1.5 : 5
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(ROOT, 'bench/lib/storage-ceiling-child.ts'),
      JSON.stringify({
        sizes,
        seconds,
        meters: metersFor(ctx),
        noRollup: ctx.tiny ? [] : [1000, 5000],
      }),
    ],
    { cwd: ROOT, maxBuffer: 1 << 24, timeout: 600_000 },
  )
  const out = JSON.parse(stdout.trim().split('\n').pop()!) as {
    results: {
      rollup: boolean
      rows: number
      inserts: number
      rowsPerS: number
      msPerInsert: number
      cpuMsPer1k: number
    }[]
    peakRssMiB: number
  }
  const rows: Row[] = out.results.map((r) => {
    // Only the real write path (readings and their rollup) is a ceiling for ingest.
    if (r.rollup) ctx.shared.storage.set(r.rows, r.rowsPerS)
    const tag = !r.rollup
      ? ', no rollup'
      : observed.some((s) => Math.abs(s - r.rows) <= 50)
        ? ' (observed)'
        : ''
    return {
      scenario: 'storage-ceiling',
      label: `${r.rows} rows/INSERT${tag}`,
      rate: r.rowsPerS,
      unit: 'rows/s' as const,
      p50: r.msPerInsert,
      cpuMsPer1k: r.cpuMsPer1k,
      peakRssMiB: out.peakRssMiB,
      detail: { inserts: r.inserts, msPerInsert: round(r.msPerInsert, 1) },
    }
  })
  return {
    name: 'storage-ceiling',
    rows,
    notes: [
      'p50 column = mean ms per INSERT. Same migrations and row shape as the server; bodies prebuilt, one INSERT at a time (async_insert=0) like the group-commit writer, each handed on to the rollup feed as the server does (src/store/rollup-feed.ts; its last write inside the window). "no rollup" rows repeat two sizes with readings alone: what the rollup costs (not a ceiling).',
      observed.length
        ? `insert sizes observed in ingest runs: ${observed.join(', ')} rows (mean per INSERT at each batch size's best closed-loop run).`
        : 'no ingest run preceded: fixed sizes only.',
    ],
  }
}
