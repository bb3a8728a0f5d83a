// Several runs of the same scenarios summarised row by row: each figure as the median with
// its min–max, which is how closing notes report them (issue 13: the median of ≥ 3 runs,
// min–max, and the machine's load). A row is the same row in every run when its scenario and
// label match; an open-loop row names its offered rate, which differs run by run, so that
// part of the label is left out of the match.
import { round, textTable, type Row, type ScenarioResult } from './report.js'

export interface Spread {
  median: number
  min: number
  max: number
}

export interface RowSpread {
  scenario: string
  /** the row's label without an offered rate */
  label: string
  unit: Row['unit']
  /** in how many runs the row was measured */
  runs: number
  rate: Spread
  ratio?: Spread
  ceiling?: string
  p99?: Spread
  cpuMsPer1k?: Spread
  mainMsPer1k?: Spread
  mainWaitPct?: Spread
}

/** The label of a row as it is matched across runs. */
export function sameRowLabel(label: string): string {
  return label.replace(/ \([\d.]+ req\/s\)/, '')
}

/** Median (the mean of the middle two for an even count), min and max; undefined when empty. */
export function spread(values: readonly number[]): Spread | undefined {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (!v.length) return undefined
  const mid = v.length >> 1
  const median = v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2
  return { median, min: v[0]!, max: v[v.length - 1]! }
}

/** Every row of every run, in the order of first appearance, with its figures spread. */
export function spreads(runs: readonly (readonly ScenarioResult[])[]): RowSpread[] {
  const byKey = new Map<string, Row[]>()
  for (const results of runs)
    for (const r of results)
      for (const row of r.rows) {
        const key = `${row.scenario}\u0000${sameRowLabel(row.label)}`
        const rows = byKey.get(key)
        if (rows) rows.push(row)
        else byKey.set(key, [row])
      }
  return [...byKey.values()].map((rows) => {
    const first = rows[0]!
    const of = (f: (r: Row) => number | undefined) =>
      spread(rows.map(f).filter((x): x is number => x !== undefined))
    return {
      scenario: first.scenario,
      label: sameRowLabel(first.label),
      unit: first.unit,
      runs: rows.length,
      rate: of((r) => r.rate)!,
      ratio: of((r) => r.ratio),
      ceiling: first.ceiling?.name,
      p99: of((r) => r.p99),
      cpuMsPer1k: of((r) => r.cpuMsPer1k),
      mainMsPer1k: of((r) => r.detail?.mainMsPer1k as number | undefined),
      mainWaitPct: of((r) => r.detail?.mainWaitPct as number | undefined),
    }
  })
}

const fmt = (x: number, scale = 1, d = 1) =>
  Math.abs(x * scale) >= 10_000 ? `${round((x * scale) / 1000, 1)} k` : String(round(x * scale, d))

/** `median (min–max)`, or '' when the figure was not measured. */
export function fmtSpread(s: Spread | undefined, scale = 1, d = 1): string {
  if (!s) return ''
  if (s.min === s.max) return fmt(s.median, scale, d)
  return `${fmt(s.median, scale, d)} (${fmt(s.min, scale, d)}–${fmt(s.max, scale, d)})`
}

/** The spreads as a text table, one line per row. */
export function spreadTable(rows: readonly RowSpread[]): string {
  const head = [
    'scenario',
    'run',
    'n',
    'rate',
    'unit',
    'ratio %',
    'p99 ms',
    'CPU ms/1k',
    'main ms/1k',
    'main wait %',
  ]
  const lines: string[][] = [head]
  for (const r of rows)
    lines.push([
      r.scenario,
      r.label,
      String(r.runs),
      fmtSpread(r.rate, 1, 0),
      r.unit,
      fmtSpread(r.ratio, 100),
      fmtSpread(r.p99, 1, 0),
      fmtSpread(r.cpuMsPer1k),
      fmtSpread(r.mainMsPer1k),
      fmtSpread(r.mainWaitPct),
    ])
  return textTable(lines)
}
