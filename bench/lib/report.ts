// Result rows and the printed table. Every scenario reports the same columns; `ratio` is the
// row's throughput divided by the ceiling named in `ceiling`, measured in the same run.
import type { Measured } from './loadgen.js'

export interface Row {
  scenario: string
  label: string
  /** readings (or telegrams, queries) per second */
  rate: number
  unit: 'readings/s' | 'telegrams/s' | 'queries/s' | 'rows/s' | 'req/s'
  p50?: number
  p99?: number
  p999?: number
  cpuMsPer1k?: number
  peakRssMiB?: number
  ceiling?: { name: string; rate: number }
  ratio?: number
  detail?: Record<string, unknown>
}

export interface ScenarioResult {
  name: string
  rows: Row[]
  notes: string[]
  raw?: unknown
}

export function fromLoad(
  scenario: string,
  label: string,
  m: Measured,
  peakRssMiB: number,
  unit: Row['unit'] = 'readings/s',
): Row {
  return {
    scenario,
    label,
    rate: m.accepted > 0 ? m.acceptedPerS : m.sentReadingsPerS,
    unit,
    p50: m.latencyMs.p50,
    p99: m.latencyMs.p99,
    p999: m.latencyMs.p999,
    cpuMsPer1k: m.cpuMsPer1k,
    peakRssMiB,
    detail: {
      requestsPerS: round(m.requestsPerS, 1),
      statuses: m.statuses,
      duplicates: m.duplicates,
      rejected: m.rejected,
      serverCores: round(m.serverCores, 2),
      ...(m.mainMsPer1k !== undefined ? { mainMsPer1k: round(m.mainMsPer1k, 1) } : {}),
      ...(m.mainWaitShare !== undefined && Number.isFinite(m.mainWaitShare)
        ? { mainWaitPct: round(m.mainWaitShare * 100, 1) }
        : {}),
      ...(m.threadsMsPer1k
        ? {
            threadsMsPer1k: Object.fromEntries(
              Object.entries(m.threadsMsPer1k).map(([k, v]) => [k, round(v, 1)]),
            ),
          }
        : {}),
      generatorCpuMsPerS: round((m.generatorCpuMs / (m.windowS * 1000)) * 1000, 0),
      maxConnectionsUsed: m.maxConnectionsUsed,
      queuedMax: m.queuedMax,
      ...(m.offeredRate !== undefined ? { offeredReqPerS: round(m.offeredRate, 1) } : {}),
    },
  }
}

export function withRatio(row: Row, name: string, rate: number | undefined): Row {
  if (!rate || !Number.isFinite(rate)) return row
  return { ...row, ceiling: { name, rate }, ratio: row.rate / rate }
}

export const round = (x: number, d = 0) =>
  Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x

const fmtRate = (x: number) => (x >= 10_000 ? `${round(x / 1000, 1)} k` : String(round(x, 0)))
const fmtMs = (x?: number) =>
  x === undefined || !Number.isFinite(x) ? '' : x >= 100 ? String(round(x)) : String(round(x, 1))

export function table(results: ScenarioResult[]): string {
  const head = [
    'scenario',
    'run',
    'rate',
    'unit',
    'p50 ms',
    'p99 ms',
    'p999 ms',
    'CPU ms/1k',
    'main ms/1k',
    'main wait %',
    'dec/merge/rest',
    'peak RSS MiB',
    'ratio',
    'ceiling',
  ]
  const lines: string[][] = [head]
  for (const r of results)
    for (const row of r.rows)
      lines.push([
        row.scenario,
        row.label,
        fmtRate(row.rate),
        row.unit,
        fmtMs(row.p50),
        fmtMs(row.p99),
        fmtMs(row.p999),
        fmtMs(row.cpuMsPer1k),
        fmtMs(row.detail?.mainMsPer1k as number | undefined),
        fmtMs(row.detail?.mainWaitPct as number | undefined),
        fmtSplit(row.detail?.threadsMsPer1k as Record<string, number> | undefined),
        row.peakRssMiB === undefined ? '' : String(round(row.peakRssMiB)),
        row.ratio === undefined ? '' : `${round(row.ratio * 100, 1)} %`,
        row.ceiling ? `${row.ceiling.name} (${fmtRate(row.ceiling.rate)})` : '',
      ])
  const notes = results.flatMap((r) => r.notes.map((n) => `- ${r.name}: ${n}`))
  return textTable(lines) + (notes.length ? '\n\nNotes:\n' + notes.join('\n') : '')
}

/** Lines of cells (the first is the head) as aligned text: two columns of names, then figures. */
export function textTable(lines: readonly (readonly string[])[]): string {
  const w = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)))
  const out = lines.map((l) =>
    l.map((c, i) => (i < 2 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '),
  )
  out.splice(1, 0, w.map((n) => '-'.repeat(n)).join('  '))
  return out.join('\n')
}

/** The rest of a row's CPU per 1,000 after the main thread: decoders / merges / the rest. */
function fmtSplit(t: Record<string, number> | undefined): string {
  if (!t) return ''
  return [t.decoders, t.merges, t.rest].map((v) => fmtMs(v)).join(' / ')
}
