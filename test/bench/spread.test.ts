// The medians `npm run bench -- --runs N` prints: a row is matched across runs by scenario
// and label (an open-loop row's offered rate left out), each figure summarised as the median
// with min–max.
import t from 'tap'
import { fmtSpread, sameRowLabel, spread, spreads } from '../../bench/lib/spread.js'
import type { Row, ScenarioResult } from '../../bench/lib/report.js'

const row = (label: string, rate: number, more: Partial<Row> = {}): Row => ({
  scenario: 'gateway',
  label,
  rate,
  unit: 'readings/s',
  ...more,
})
const run = (...rows: Row[]): ScenarioResult[] => [{ name: 'gateway', rows, notes: [] }]

t.test('median, min and max', async (t) => {
  t.same(spread([3, 1, 2]), { median: 2, min: 1, max: 3 })
  t.same(
    spread([4, 1, 3, 2]),
    { median: 2.5, min: 1, max: 4 },
    'even count: mean of the middle two',
  )
  t.same(spread([NaN, 5]), { median: 5, min: 5, max: 5 }, 'a figure not measured is left out')
  t.equal(spread([]), undefined)
})

t.test('an open-loop row is the same row whatever rate it was offered', async (t) => {
  t.equal(sameRowLabel('batch 500, open 50 % of max (20.8 req/s)'), 'batch 500, open 50 % of max')
  t.equal(sameRowLabel('batch 500, closed c=8'), 'batch 500, closed c=8')
})

t.test('rows of several runs, spread figure by figure', async (t) => {
  const s = spreads([
    run(
      row('batch 500, closed c=8', 20_000, {
        ratio: 0.3,
        p99: 500,
        detail: { mainMsPer1k: 35, mainWaitPct: 4 },
      }),
      row('batch 500, open 50 % of max (10 req/s)', 10_000, { p99: 120 }),
    ),
    run(
      row('batch 500, closed c=8', 24_000, {
        ratio: 0.34,
        p99: 400,
        detail: { mainMsPer1k: 30, mainWaitPct: 12 },
      }),
      row('batch 500, open 50 % of max (12 req/s)', 12_000, { p99: 90 }),
    ),
    run(row('batch 500, closed c=8', 22_000, { ratio: 0.32, p99: 450 })),
  ])
  t.equal(s.length, 2)
  t.match(s[0], {
    label: 'batch 500, closed c=8',
    runs: 3,
    rate: { median: 22_000, min: 20_000, max: 24_000 },
    p99: { median: 450, min: 400, max: 500 },
    mainMsPer1k: { median: 32.5, min: 30, max: 35 },
    mainWaitPct: { median: 8, min: 4, max: 12 },
  })
  t.ok(Math.abs(s[0]!.ratio!.median - 0.32) < 1e-9)
  t.match(s[1], { label: 'batch 500, open 50 % of max', runs: 2, rate: { median: 11_000 } })
  t.equal(s[1]!.ratio, undefined, 'no ratio in any run: none')
  t.equal(fmtSpread(s[0]!.rate, 1, 0), '22 k (20 k–24 k)')
  t.equal(fmtSpread(s[0]!.ratio, 100), '32 (30–34)')
  t.equal(fmtSpread({ median: 7, min: 7, max: 7 }), '7', 'one value: no range')
})
