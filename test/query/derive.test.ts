import t from 'tap'
import fc from 'fast-check'
import {
  deriveConsumption,
  splitLinear,
  type DeriveOptions,
  type SaldoPoint,
} from '../../src/query/derive.js'

const MIN = 60_000
const T0 = Date.UTC(2024, 0, 1)
const p = (minute: number, v: number): SaldoPoint => ({
  recordedAt: T0 + minute * MIN,
  canonicalValue: v,
})
const opts = (o: Partial<DeriveOptions> = {}): DeriveOptions => ({
  rolloverMax: null,
  expectedIntervalMinutes: 15,
  exchanges: [],
  interpolate: null,
  unit: 'kwh',
  ...o,
})
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)

t.test('empty and single point give no rows', async (t) => {
  t.same(deriveConsumption([], opts()), [])
  t.same(deriveConsumption([p(0, 5)], opts()), [])
})

t.test('plain deltas between consecutive readings', async (t) => {
  const rows = deriveConsumption([p(0, 10), p(15, 12.5), p(30, 12.5)], opts())
  t.equal(rows.length, 2)
  t.same(rows[0], {
    period_start: T0,
    period_end: T0 + 15 * MIN,
    consumption: 2.5,
    unit: 'kwh',
    gap: false,
    rollover: false,
    exchange: false,
    unknown: false,
    interpolated: false,
  })
  t.equal(rows[1]!.consumption, 0)
})

t.test('gap is strictly longer than the cadence; no cadence means no gaps', async (t) => {
  const rows = deriveConsumption([p(0, 0), p(15, 1), p(31, 2)], opts())
  t.same(
    rows.map((r) => r.gap),
    [false, true],
  )
  t.same(
    deriveConsumption([p(0, 0), p(600, 1)], opts({ expectedIntervalMinutes: null })).map(
      (r) => r.gap,
    ),
    [false],
  )
})

t.test('rollover: rollover_max - previous + current', async (t) => {
  const rows = deriveConsumption([p(0, 9990), p(15, 5)], opts({ rolloverMax: 10000 }))
  t.equal(rows[0]!.consumption, 15)
  t.equal(rows[0]!.rollover, true)
  t.equal(rows[0]!.unknown, false)
})

t.test(
  'decrease not explained by rollover is unknown; next interval derived normally',
  async (t) => {
    // wrapped distance 10000-6000+1000 = 5000 is not shorter than the decrease 5000 → unexplained
    const a = deriveConsumption(
      [p(0, 6000), p(15, 1000), p(30, 1010)],
      opts({ rolloverMax: 10000 }),
    )
    t.same(
      a.map((r) => [r.consumption, r.unknown, r.rollover]),
      [
        [null, true, false],
        [10, false, false],
      ],
    )
    const b = deriveConsumption([p(0, 100), p(15, 90), p(30, 95)], opts())
    t.same(
      b.map((r) => r.consumption),
      [null, 5],
    )
    t.equal(b[0]!.unit, 'kwh')
  },
)

t.test('exchange with both baselines', async (t) => {
  const ex = { exchangedAt: T0 + 20 * MIN, oldFinalValue: 105, newInitialValue: 2 }
  const rows = deriveConsumption(
    [p(0, 100), p(15, 103), p(30, 5), p(45, 7)],
    opts({ exchanges: [ex] }),
  )
  t.same(
    rows.map((r) => [r.consumption, r.exchange, r.unknown]),
    [
      [3, false, false],
      [105 - 103 + (5 - 2), true, false],
      [2, false, false],
    ],
  )
})

t.test(
  'exchange without both baselines is unknown; reading at exactly exchanged_at is old device',
  async (t) => {
    for (const ex of [
      { exchangedAt: T0 + 15 * MIN, oldFinalValue: null, newInitialValue: 0 },
      { exchangedAt: T0 + 15 * MIN, oldFinalValue: 120, newInitialValue: null },
    ]) {
      const rows = deriveConsumption([p(0, 100), p(15, 110), p(30, 3)], opts({ exchanges: [ex] }))
      t.same(
        rows.map((r) => [r.consumption, r.exchange, r.unknown]),
        [
          [10, false, false],
          [null, true, true],
        ],
      )
    }
  },
)

t.test('inconsistent exchange baselines (negative segment) are unknown', async (t) => {
  const ex = { exchangedAt: T0 + 5 * MIN, oldFinalValue: 90, newInitialValue: 0 }
  const rows = deriveConsumption([p(0, 100), p(15, 3)], opts({ exchanges: [ex] }))
  t.same([rows[0]!.consumption, rows[0]!.unknown, rows[0]!.exchange], [null, true, true])
})

t.test('two exchanges in one interval chain their baselines', async (t) => {
  const exs = [
    { exchangedAt: T0 + 5 * MIN, oldFinalValue: 102, newInitialValue: 0 },
    { exchangedAt: T0 + 10 * MIN, oldFinalValue: 4, newInitialValue: 1 },
  ]
  const rows = deriveConsumption([p(0, 100), p(15, 3)], opts({ exchanges: exs }))
  t.equal(rows[0]!.consumption, 2 + 4 + 2)
})

t.test('interpolate=linear splits a gap into cadence slots summing to the delta', async (t) => {
  const rows = deriveConsumption([p(0, 0), p(60, 10)], opts({ interpolate: 'linear' }))
  t.equal(rows.length, 4)
  t.ok(rows.every((r) => r.interpolated && r.gap && r.period_end - r.period_start === 15 * MIN))
  t.same(
    rows.map((r) => r.consumption),
    [2.5, 2.5, 2.5, 2.5],
  )
  t.equal(rows[0]!.period_start, T0)
  t.equal(rows[3]!.period_end, T0 + 60 * MIN)
})

t.test(
  'non-multiple gap: full slots plus a shorter remainder slot with a proportional share',
  async (t) => {
    const rows = deriveConsumption([p(0, 0), p(40, 8)], opts({ interpolate: 'linear' }))
    t.same(
      rows.map((r) => (r.period_end - r.period_start) / MIN),
      [15, 15, 10],
    )
    t.same(
      rows.map((r) => r.consumption),
      [3, 3, 2],
    )
  },
)

t.test(
  'non-gap intervals are not interpolated; unknown gap intervals are not interpolated',
  async (t) => {
    const rows = deriveConsumption(
      [p(0, 0), p(15, 1), p(60, 0.5), p(75, 2)],
      opts({ interpolate: 'linear' }),
    )
    t.same(
      rows.map((r) => [r.consumption, r.gap, r.unknown, r.interpolated]),
      [
        [1, false, false, false],
        [null, true, true, false],
        [1.5, false, false, false],
      ],
    )
  },
)

t.test('rollover + gap + interpolate together', async (t) => {
  const rows = deriveConsumption(
    [p(0, 995), p(45, 5)],
    opts({ rolloverMax: 1000, interpolate: 'linear' }),
  )
  t.equal(rows.length, 3)
  t.ok(rows.every((r) => r.rollover && r.gap && r.interpolated && !r.unknown))
  t.equal(sum(rows.map((r) => r.consumption!)), 10)
})

t.test('exchange + gap + interpolate with baselines', async (t) => {
  const ex = { exchangedAt: T0 + 20 * MIN, oldFinalValue: 101, newInitialValue: 0 }
  const rows = deriveConsumption(
    [p(0, 100), p(30, 1)],
    opts({ exchanges: [ex], interpolate: 'linear' }),
  )
  t.same(
    rows.map((r) => [r.consumption, r.exchange, r.interpolated]),
    [
      [1, true, true],
      [1, true, true],
    ],
  )
})

t.test('property: slot shares sum exactly (in slot order) to the bridged delta', async (t) => {
  fc.assert(
    fc.property(
      fc.double({ min: 0, max: 1e7, noNaN: true }),
      fc.integer({ min: 16, max: 5000 }),
      fc.integer({ min: 1, max: 60 }),
      (delta, minutes, cadence) => {
        const rows = deriveConsumption(
          [p(0, 1), p(minutes, 1 + delta)],
          opts({ interpolate: 'linear', expectedIntervalMinutes: cadence }),
        )
        const total =
          rows.length === 1 && !rows[0]!.interpolated
            ? rows[0]!.consumption
            : sum(rows.map((r) => r.consumption!))
        const bridged = 1 + delta - 1
        if (total !== bridged) return false
        if (minutes > cadence) {
          if (rows.length !== Math.ceil(minutes / cadence)) return false
          if (rows[rows.length - 1]!.period_end !== T0 + minutes * MIN) return false
        }
        return true
      },
    ),
    { numRuns: 500 },
  )
  t.equal(sum(splitLinear(0.3, [1, 1, 1])), 0.3)
})
