import t from 'tap'
import {
  computeFlags,
  classifySaldoStep,
  type QualityFlag,
  type TimelineReading,
} from '../../src/actors/quality/index.js'
import { MeterTimeline } from '../../src/actors/timeline.js'
import { cons, ctx, MIN, rd, saldos, T0 } from './helpers.js'

const flagsOf = (rs: TimelineReading[], c = ctx()) => {
  const sorted = [...rs].sort((a, b) => a.recordedAt - b.recordedAt)
  const f = computeFlags(sorted, c)
  return sorted.map((r, i) => ({ kind: r.kind, m: (r.recordedAt - T0) / MIN, flags: f[i]! }))
}
const at = (rs: ReturnType<typeof flagsOf>, kind: string, m: number) =>
  rs.find((x) => x.kind === kind && x.m === m)!.flags

t.test('unit_mismatch: only flag, and invisible as a neighbour', async (t) => {
  const rs = [rd('saldo', 0, 100), rd('saldo', 15, null, true), rd('saldo', 30, 101)]
  const f = flagsOf(rs)
  t.same(at(f, 'saldo', 15), ['unit_mismatch'])
  t.same(at(f, 'saldo', 30), [], 'compared with 100, not with the mismatched reading')
  // a mismatched reading with a (bogus) value is still skipped
  const g = flagsOf([rd('saldo', 0, 100), rd('saldo', 15, 5, true), rd('saldo', 30, 101)])
  t.same(at(g, 'saldo', 15), ['unit_mismatch'])
  t.same(at(g, 'saldo', 30), [])
})

t.test('negative_consumption: strictly below zero', async (t) => {
  const f = flagsOf(cons([0, -0.001, 0]))
  t.same(
    f.map((x) => x.flags),
    [[], ['negative_consumption'], []],
  )
  t.same(flagsOf(saldos([-5]))[0]!.flags, [], 'negative saldo is not negative_consumption')
})

t.test('saldo_decrease vs rollover_wrap boundary', async (t) => {
  t.same(classifySaldoStep(10, 12, 100), { type: 'normal', delta: 2 })
  t.same(
    classifySaldoStep(90, 30, 100),
    { type: 'rollover', delta: 40 },
    'wrapped 40 < decrease 60',
  )
  t.same(
    classifySaldoStep(80, 30, 100),
    { type: 'decrease' },
    'wrapped 50 == decrease 50 is not a wrap',
  )
  t.same(classifySaldoStep(90, 30, null), { type: 'decrease' })
  t.same(classifySaldoStep(120, 5, 100), { type: 'decrease' }, 'previous above rollover_max')
  t.same(classifySaldoStep(90, -1, 100), { type: 'decrease' }, 'negative current')
  const f = flagsOf(saldos([95, 3, 2, 50]), ctx({ rolloverMax: 100 }))
  t.same(
    f.map((x) => x.flags),
    [[], ['rollover_wrap'], ['saldo_decrease'], []],
  )
  t.same(flagsOf(saldos([95, 3]))[1]!.flags, ['saldo_decrease'], 'without rollover_max')
})

t.test(
  'meter_exchange: first valid reading(s) strictly after exchanged_at; no decrease across it',
  async (t) => {
    const c = ctx({
      exchanges: [{ exchangedAt: T0 + 15 * MIN, oldFinalValue: null, newInitialValue: null }],
    })
    const rs = [...saldos([100, 110, 2, 3]), ...cons([5, 10, 1, 1]), rd('saldo', 40, 9, true)]
    const f = flagsOf(rs, c)
    t.same(at(f, 'saldo', 15), [], 'reading at exactly exchanged_at belongs to the old device')
    t.same(at(f, 'saldo', 30), ['meter_exchange'], 'no saldo_decrease across the exchange')
    t.same(at(f, 'consumption', 30), ['meter_exchange'], 'both kinds at the first instant')
    t.same(at(f, 'saldo', 45), [])
    // a unit-mismatched reading is not "the first"
    const g = flagsOf([rd('saldo', 0, 1), rd('saldo', 20, 1, true), rd('saldo', 30, 2)], c)
    t.same(at(g, 'saldo', 20), ['unit_mismatch'])
    t.same(at(g, 'saldo', 30), ['meter_exchange'])
  },
)

t.test('saldo_mismatch: aligned consumption sum vs saldo delta with tolerance', async (t) => {
  // D = 100; tolerance = max(0.01, 100/100) = 1
  const ok = flagsOf([...saldos([0, 100], 60), ...cons([0, 50, 49, 0, 0], 15)])
  t.same(at(ok, 'saldo', 60), [], '|99 - 100| = 1 is at the tolerance')
  const bad = flagsOf([...saldos([0, 100], 60), ...cons([0, 50, 48.5, 0, 0], 15)])
  t.same(at(bad, 'saldo', 60), ['saldo_mismatch'])
  const unaligned = flagsOf([...saldos([0, 100], 60), ...cons([50, 0, 0], 15, 15)])
  t.same(
    at(unaligned, 'saldo', 60),
    [],
    'no consumption at the earlier saldo instant → not checked',
  )
  const small = flagsOf([...saldos([0, 0.5]), ...cons([0, 0.505])])
  t.same(at(small, 'saldo', 15), [], 'absolute floor 0.01')
  const small2 = flagsOf([...saldos([0, 0.5]), ...cons([0, 0.52])])
  t.same(at(small2, 'saldo', 15), ['saldo_mismatch'])
  const wrap = flagsOf([...saldos([95, 5]), ...cons([0, 10])], ctx({ rolloverMax: 100 }))
  t.same(at(wrap, 'saldo', 15), ['rollover_wrap'], 'rollover-bridged delta is compared')
  const dec = flagsOf([...saldos([95, 5]), ...cons([0, 10])])
  t.same(at(dec, 'saldo', 15), ['saldo_decrease'], 'unexplained decrease is not mismatch-checked')
})

t.test(
  'saldo_mismatch: more than 96 consumption readings between saldo readings → not checked',
  async (t) => {
    const c96 = cons(Array.from({ length: 97 }, (_, i) => (i === 0 ? 0 : 1)))
    const f96 = flagsOf([rd('saldo', 0, 0), rd('saldo', 96 * 15, 50), ...c96])
    t.same(at(f96, 'saldo', 96 * 15), ['saldo_mismatch'], '96 readings: checked (96 vs 50)')
    const c97 = cons(Array.from({ length: 98 }, (_, i) => (i === 0 ? 0 : 1)))
    const f97 = flagsOf([rd('saldo', 0, 0), rd('saldo', 97 * 15, 50), ...c97])
    t.same(at(f97, 'saldo', 97 * 15), [], '97 readings: not checked')
  },
)

t.test(
  'implausible_rate: > 10 × max of positive rates in previous 24 intervals, min 4',
  async (t) => {
    // rates per hour: each 15-min interval of 1 → 4/h
    const base = [0, 1, 1, 1, 1]
    t.same(flagsOf(cons([...base, 10]))[5]!.flags, [], 'exactly 10× is not flagged')
    t.same(flagsOf(cons([...base, 10.01]))[5]!.flags, ['implausible_rate'])
    t.same(
      flagsOf(cons([0, 1, 1, 1, 11]))[4]!.flags,
      [],
      'only 3 positive rates before: no baseline',
    )
    t.same(flagsOf(cons([0, 0, 0, 0, 0, 0, 11]))[6]!.flags, [], 'zero baseline: not flagged')
    // longer interval lowers the rate: 30 min with value 20 → 40/h == 10 × 4/h
    t.same(flagsOf([...cons(base), rd('consumption', 90, 20)])[5]!.flags, [])
    // saldo: delta per hour, rollover-bridged
    t.same(flagsOf(saldos([0, 1, 2, 3, 4, 15]))[5]!.flags, ['implausible_rate'])
    t.same(
      flagsOf(saldos([96, 97, 98, 99, 0, 1]), ctx({ rolloverMax: 100 }))
        .map((x) => x.flags)
        .flat(),
      ['rollover_wrap'],
    )
    t.same(flagsOf(saldos([90, 91, 92, 93, 94, 5]), ctx({ rolloverMax: 100 }))[5]!.flags, [
      'implausible_rate',
      'rollover_wrap',
    ])
    // baseline window: the 25th interval back does not count
    const far = [0, 1000, ...Array(24).fill(1), 20]
    t.same(
      flagsOf(cons(far))[26]!.flags,
      ['implausible_rate'],
      'a large rate 25 intervals back is ignored',
    )
    const near = [0, 1000, ...Array(23).fill(1), 20]
    t.same(flagsOf(cons(near))[25]!.flags, [], 'a large rate 24 intervals back still counts')
  },
)

t.test('MeterTimeline: duplicate, late reading re-flags neighbours, changed list', async (t) => {
  const tl = new MeterTimeline(ctx({ rolloverMax: 100 }))
  const ins = (r: TimelineReading) => tl.insert(r)
  t.same(ins(rd('saldo', 0, 90)), { duplicate: false, flags: [], changed: [] })
  t.same(ins(rd('saldo', 30, 10)), { duplicate: false, flags: ['rollover_wrap'], changed: [] })
  t.same(ins(rd('saldo', 30, 11)), { duplicate: true })
  t.ok(tl.has('saldo', T0 + 30 * MIN) && !tl.has('consumption', T0 + 30 * MIN))
  // late reading at 15 with 95: 90→95 normal, 95→10 still a wrap
  const late = ins(rd('saldo', 15, 95))
  t.same(late, { duplicate: false, flags: [], changed: [] })
  // late reading at 20 with 5: 95→5 wrap, 5→10 normal → reading at 30 loses rollover_wrap
  const late2 = ins(rd('saldo', 20, 5))
  t.same(late2.duplicate === false && late2.flags, ['rollover_wrap'])
  t.same(late2.duplicate === false && late2.changed.map((c) => [c.recordedAt - T0, c.flags]), [
    [30 * MIN, []],
  ])
  t.equal(tl.earliest(), T0)
  t.equal(tl.latest('saldo'), T0 + 30 * MIN)
  t.equal(tl.latest('consumption'), null)
  t.same(tl.neighbourhood('saldo', T0), { before: 97, after: 97 })
  t.ok(tl.isAppend('saldo', T0 + 31 * MIN))
  t.notOk(tl.isAppend('saldo', T0 + 30 * MIN))
  t.ok(
    tl.isAppend('consumption', T0 + 30 * MIN),
    'same instant as the latest saldo is an append for consumption',
  )
})

t.test(
  'MeterTimeline: late reading moves meter_exchange; unit mismatch changes nothing',
  async (t) => {
    const c = ctx({
      exchanges: [{ exchangedAt: T0 + 10 * MIN, oldFinalValue: 1, newInitialValue: 0 }],
    })
    const tl = new MeterTimeline(c, [rd('saldo', 0, 1)])
    const a = tl.insert(rd('saldo', 30, 3))
    t.same(a.duplicate === false && a.flags, ['meter_exchange'])
    const m = tl.insert(rd('saldo', 15, 2, true))
    t.same(m, { duplicate: false, flags: ['unit_mismatch'], changed: [] })
    const b = tl.insert(rd('consumption', 15, 2))
    t.same(b.duplicate === false && b.flags, ['meter_exchange'])
    t.same(b.duplicate === false && b.changed.map((x) => [x.kind, x.flags]), [['saldo', []]])
  },
)

t.test(
  'MeterTimeline: trim keeps at least the neighbourhood; load keeps stored flags',
  async (t) => {
    const tl = new MeterTimeline(ctx())
    for (let i = 0; i < 300; i++) tl.insert(rd('saldo', i * 15, i))
    tl.trim(10)
    t.equal(tl.size, 97)
    t.equal(tl.earliest(), T0 + 203 * 15 * MIN)
    tl.load([{ ...rd('saldo', 0, 0), flags: ['saldo_decrease'] }])
    t.same(tl.get('saldo', T0)!.flags, ['saldo_decrease'], 'loaded readings are not recomputed')
  },
)

t.test(
  'MeterTimeline: a late reading changes the baseline of the reading 25 positions later',
  async (t) => {
    const tl = new MeterTimeline(ctx())
    const series = cons([0, ...Array(24).fill(1), 10.5])
    let last: QualityFlag[] = []
    for (const r of series) {
      const res = tl.insert(r)
      if (!res.duplicate) last = [...res.flags]
    }
    t.same(last, ['implausible_rate'], '42/h > 10 × 4/h')
    // at minute 5: the old reading at 15 now covers 10 minutes → 6/h, baseline of the last one rises
    const res = tl.insert(rd('consumption', 5, 0))
    t.same(
      res.duplicate === false && res.changed.map((c) => [(c.recordedAt - T0) / MIN, c.flags]),
      [[25 * 15, []]],
    )
    t.same(
      tl.readings().map((r) => r.flags),
      computeFlags(tl.readings(), ctx()),
    )
  },
)

t.test(
  'MeterTimeline: retain drops the oldest invalid readings, in order or not, as a sort would',
  async (t) => {
    // Invalid readings (no canonical value) arrive mostly in order, some late; after each
    // insert the window is retained and compared with what sorting every time keeps.
    const span = 6 * 60 * MIN
    const max = 120
    const tl = new MeterTimeline(ctx())
    let kept: number[] = []
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    for (let i = 0; i < 2_000; i++) {
      // every tenth a late one, up to 8 hours back (some already older than the window)
      const minute = next() < 0.1 ? i - Math.floor(next() * 480) : i
      const r = rd('consumption', minute, null)
      if (kept.includes(r.recordedAt) || tl.has('consumption', r.recordedAt)) continue
      tl.insert(r)
      kept.push(r.recordedAt)
      const dropped = tl.retain(span, max)
      const sorted = [...kept].sort((a, b) => a - b)
      const floor = sorted[sorted.length - 1]! - span
      let k = 0
      while (k < sorted.length && (sorted[k]! < floor || sorted.length - k > max)) k++
      const want = k ? sorted[k - 1]! : -Infinity
      kept = sorted.slice(k)
      if (dropped.consumption !== want) {
        t.fail(`insert ${i}: dropped up to ${dropped.consumption}, a sort ${want}`)
        return
      }
    }
    t.same(
      tl.readings().map((r) => r.recordedAt),
      kept,
      'the same readings held at the end',
    )
  },
)
