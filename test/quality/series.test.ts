// Series (src/actors/quality/series.ts) against a plain array of points: any mix of inserts
// (in order, late, at the front), drops from the old end, flag changes and kept rates reads
// back the same readings, flags and rates, across the moves and growth of its arrays.
import t from 'tap'
import fc from 'fast-check'
import { NO_FLAGS, Series, type QualityFlag } from '../../src/actors/quality/index.js'

interface Point {
  t: number
  v: number
  flags: readonly QualityFlag[]
  rate: number | null | undefined
}

type Op =
  | { op: 'insert'; t: number; v: number }
  | { op: 'drop'; n: number }
  | { op: 'flag'; at: number }
  | { op: 'rate'; at: number; rate: number | null }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('insert' as const),
      t: fc.integer({ min: 0, max: 5_000 }),
      v: fc.double({ noNaN: true, noDefaultInfinity: true }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('drop' as const), n: fc.integer({ min: 0, max: 40 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('flag' as const), at: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('rate' as const),
      at: fc.nat(),
      rate: fc.option(fc.double({ min: 0, noNaN: true }), { nil: null }),
    }),
  },
)

/** Times mostly ascending (appends), with late and repeated ones among them. */
const opsArb = fc.array(opArb, { minLength: 1, maxLength: 400 }).map((ops) => {
  let clock = 0
  return ops.map((o) =>
    o.op === 'insert' && o.t % 4 !== 0 ? { ...o, t: (clock += 1 + (o.t % 7)) } : o,
  )
})

function check(s: Series, model: Point[]): boolean {
  if (s.length !== model.length) return false
  for (let i = 0; i < model.length; i++) {
    const m = model[i]!
    if (s.t(i) !== m.t || !Object.is(s.v(i), m.v) || s.flags(i) !== m.flags) return false
    // The first reading has no interval in a window (its predecessor may be gone).
    if (i > 0 && s.knownRate(i) !== m.rate) return false
  }
  if (s.lastT() !== (model.length ? model[model.length - 1]!.t : -Infinity)) return false
  for (const p of model) {
    if (s.indexOf(p.t) !== model.indexOf(p)) return false
    if (s.lowerBound(p.t) !== model.findIndex((q) => q.t >= p.t)) return false
    const ub = model.findIndex((q) => q.t > p.t)
    if (s.upperBound(p.t) !== (ub < 0 ? model.length : ub)) return false
  }
  return true
}

t.test('any mix of inserts, drops, flags and rates reads back as the plain array', async (t) => {
  fc.assert(
    fc.property(opsArb, (ops) => {
      const s = new Series()
      const model: Point[] = []
      for (const o of ops) {
        if (o.op === 'insert') {
          const i = model.findIndex((p) => p.t >= o.t)
          const at = i < 0 ? model.length : i
          if (model[at]?.t === o.t) continue
          s.insert(at, o.t, o.v, NO_FLAGS)
          model.splice(at, 0, { t: o.t, v: o.v, flags: NO_FLAGS, rate: undefined })
          // The next reading's interval now starts at the new one.
          if (model[at + 1]) model[at + 1]!.rate = undefined
        } else if (o.op === 'drop') {
          const n = Math.min(o.n, model.length)
          s.dropFirst(n)
          model.splice(0, n)
        } else if (model.length) {
          const at = o.at % model.length
          if (o.op === 'flag') {
            const flags: QualityFlag[] = ['implausible_rate']
            s.setFlags(at, flags)
            model[at]!.flags = flags
          } else {
            s.keepRate(at, o.rate)
            model[at]!.rate = o.rate
          }
        }
        if (!check(s, model)) return false
      }
      return true
    }),
    { numRuns: 300 },
  )
  t.pass('property held')
})

t.test('a window moving along keeps its arrays and reads back its last readings', async (t) => {
  const s = new Series()
  for (let i = 0; i < 5_000; i++) {
    s.insert(s.length, i * 60_000, i / 8, NO_FLAGS)
    if (s.length > 457) s.dropFirst(s.length - 457)
  }
  t.equal(s.length, 457)
  t.equal(s.t(0), (5_000 - 457) * 60_000, 'the oldest held')
  t.equal(s.v(456), 4_999 / 8, 'the newest held')
  t.equal(s.indexOf(4_800 * 60_000), 4_800 - (5_000 - 457))
  t.equal(s.indexOf(4_000 * 60_000), -1, 'dropped')
  // A late reading in the middle, then more drops: times stay in order.
  const at = s.lowerBound(4_800 * 60_000 + 30_000)
  s.insert(at, 4_800 * 60_000 + 30_000, 600.0625, NO_FLAGS)
  s.dropFirst(100)
  let ordered = true
  for (let i = 1; i < s.length; i++) if (!(s.t(i) > s.t(i - 1))) ordered = false
  t.ok(ordered, 'ascending after a late insert and drops')
  t.equal(s.v(s.indexOf(4_800 * 60_000 + 30_000)), 600.0625)
})

t.test(
  'readings moved down into the room dropped ones left keep their values, flags and rates',
  async (t) => {
    const s = new Series()
    const flagged: QualityFlag[] = ['saldo_decrease']
    const flagsOf = (i: number) => (i % 7 === 0 ? flagged : NO_FLAGS)
    const rateOf = (i: number) => (i % 5 === 0 ? null : i * 2)
    const add = (i: number) => {
      s.insert(s.length, i * 1_000, i + 0.5, flagsOf(i))
      s.keepRate(s.length - 1, rateOf(i))
    }
    for (let i = 0; i < 40; i++) add(i)
    // A window of 10 moving along for 300 readings: its arrays' room runs out again and again.
    s.dropFirst(30)
    for (let i = 40; i < 340; i++) {
      add(i)
      s.dropFirst(1)
    }
    const got = Array.from({ length: s.length }, (_, i) => [
      s.t(i),
      s.v(i),
      s.knownRate(i),
      s.flags(i),
    ])
    const want = Array.from({ length: 10 }, (_, j) => {
      const i = j + 330
      return [i * 1_000, i + 0.5, rateOf(i), flagsOf(i)]
    })
    t.same(got, want)
    s.insert(10, 340_000, 340.5, NO_FLAGS)
    t.equal(s.knownRate(10), undefined, 'an appended reading has no rate yet')
    t.equal(s.knownRate(9), 339 * 2, 'the one before keeps its own')
  },
)
