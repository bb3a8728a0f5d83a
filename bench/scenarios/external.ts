// Scenarios 6 (queries, bench/query/) and 7 (decoder micro-bench, bench/decode/): benches
// maintained with their features; the harness runs them in a child process and folds their
// figures into the report. When a module is missing the scenario says so and is skipped.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Ctx } from '../lib/context.js'
import type { Row, ScenarioResult } from '../lib/report.js'
import { ROOT } from '../lib/server.js'

const run = promisify(execFile)

async function runChild(rel: string, fn: string, quick: boolean): Promise<any> {
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(ROOT, 'bench/scenarios/child-bench.ts'),
      path.join(ROOT, rel),
      fn,
      quick ? '1' : '0',
    ],
    { cwd: ROOT, maxBuffer: 1 << 26, timeout: 900_000 },
  )
  const i = stdout.lastIndexOf('@@RESULT@@')
  if (i < 0) throw new Error('no result from ' + rel)
  return JSON.parse(stdout.slice(i + 10))
}

/** Every {p50_ms|...} leaf of a result object, flattened with its path. */
function leaves(o: any, prefix = ''): [string, any][] {
  if (!o || typeof o !== 'object') return []
  const out: [string, any][] = []
  for (const [k, v] of Object.entries(o)) {
    const p = prefix ? `${prefix}.${k}` : k
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      if ('p50_ms' in v) out.push([p, v])
      else out.push(...leaves(v, p))
    }
  }
  return out
}

export async function queries(ctx: Ctx): Promise<ScenarioResult> {
  const rel = 'bench/query/query-bench.ts'
  if (!fs.existsSync(path.join(ROOT, rel)))
    return { name: 'query', rows: [], notes: [`${rel} not present: skipped`] }
  const raw = await runChild(rel, 'runQueryBench', ctx.quick || ctx.tiny)
  const rows: Row[] = leaves(raw).map(([label, v]) => ({
    scenario: 'query',
    label,
    rate: v.p50_ms > 0 ? 1000 / v.p50_ms : NaN,
    unit: 'queries/s',
    p50: v.p50_ms,
    p99: v.p90_ms,
    detail: v,
    // A query's ceiling is its target: ratio = target / p50 (≥ 100 % meets it).
    ...(v.target_ms
      ? {
          ceiling: { name: `target ${v.target_ms} ms`, rate: 1000 / v.target_ms },
          ratio: v.target_ms / v.p50_ms,
        }
      : {}),
  }))
  return {
    name: 'query',
    rows,
    notes: [
      'from runQueryBench (sequential, one query at a time, in-process chDB): queries/s = 1000 / p50; the p99 column shows its p90 (few runs). Ratios: its own targets (see raw JSON).',
    ],
    raw,
  }
}

export async function decode(ctx: Ctx): Promise<ScenarioResult> {
  const rel = 'bench/decode/decode-bench.ts'
  if (!fs.existsSync(path.join(ROOT, rel)))
    return { name: 'decode', rows: [], notes: [`${rel} not present: skipped`] }
  const raw = await runChild(rel, 'runDecodeBench', ctx.quick || ctx.tiny)
  return { name: 'decode', rows: decodeRows(raw), notes: [], raw }
}

/** Rows from runDecodeBench's result, whatever its exact nesting: every numeric per-second leaf. */
function decodeRows(raw: any): Row[] {
  const rows: Row[] = []
  const walk = (o: any, p: string) => {
    if (!o || typeof o !== 'object') return
    for (const [k, v] of Object.entries(o)) {
      const q = p ? `${p}.${k}` : k
      if (typeof v === 'number' && /per_?s|rate|tps|perSec|telegrams/i.test(k))
        rows.push({ scenario: 'decode', label: q, rate: v, unit: 'telegrams/s' })
      else if (typeof v === 'object') walk(v, q)
    }
  }
  walk(raw, '')
  // WASM against the same logic as JavaScript, per core; plain WASM against the 200 k/s target.
  for (const r of rows) {
    const m = /^per_core\.(\w+)\.wasm_(.+)$/.exec(r.label)
    if (!m) continue
    const js = rows.find((x) => x.label === `per_core.${m[1]}.js_${m[2]}`)
    if (js)
      Object.assign(r, {
        ceiling: { name: 'same logic in JS', rate: js.rate },
        ratio: r.rate / js.rate,
      })
  }
  const plain = rows.find((r) => r.label === 'per_core.plain.wasm_decoded_per_s')
  if (plain)
    rows.push({
      scenario: 'decode',
      label: 'plain WASM vs target 200 k/s/core',
      rate: plain.rate,
      unit: 'telegrams/s',
      ceiling: { name: 'target', rate: 200_000 },
      ratio: plain.rate / 200_000,
    })
  return rows
}
