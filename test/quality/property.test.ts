import t from 'tap'
import fc from 'fast-check'
import { MeterTimeline } from '../../src/actors/timeline.js'
import {
  computeFlags,
  isValid,
  type Kind,
  type MeterQualityContext,
  type TimelineReading,
} from '../../src/actors/quality/index.js'
import { historyArb } from './arbitraries.js'

const key = (r: { kind: Kind; recordedAt: number }) => `${r.kind}:${r.recordedAt}`

function expected(readings: TimelineReading[], ctx: MeterQualityContext): Map<string, string> {
  const sorted = [...readings].sort((a, b) => a.recordedAt - b.recordedAt)
  const f = computeFlags(sorted, ctx)
  return new Map(sorted.map((r, i) => [key(r), f[i]!.join(',')]))
}

const scenarioArb = historyArb.chain(({ ctx, readings }) =>
  fc.record({
    ctx: fc.constant(ctx),
    readings: fc.constant(readings),
    order: fc.shuffledSubarray(readings, {
      minLength: readings.length,
      maxLength: readings.length,
    }),
    batches: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 30 }),
    restarts: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
    trims: fc.array(fc.option(fc.integer({ min: 0, max: 150 }), { nil: null }), {
      minLength: 30,
      maxLength: 30,
    }),
    resend: fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 5 }),
  }),
)

t.test('single window: any insertion order gives computeFlags of the sorted set', async (t) => {
  fc.assert(
    fc.property(scenarioArb, ({ ctx, readings, order }) => {
      const tl = new MeterTimeline(ctx)
      for (const r of order) {
        const res = tl.insert({ ...r })
        if (res.duplicate) return false
      }
      for (const r of order) if (!tl.insert({ ...r }).duplicate) return false
      const exp = expected(readings, ctx)
      const got = tl.readings()
      if (got.length !== readings.length) return false
      for (const r of got) if (r.flags.join(',') !== exp.get(key(r))) return false
      return true
    }),
    { numRuns: 150 },
  )
  t.pass('property held')
})

/**
 * Actor simulation: readings arrive in random order and random batches; the actor sometimes
 * restarts (fresh window from the store's latest readings), trims its window, loads the
 * neighbourhood from the store for non-append readings, and stores new + changed readings.
 * The store's final flags must equal computeFlags over the sorted set.
 */
t.test(
  'actor simulation: batching, restarts, trims and late readings give the batch result',
  async (t) => {
    fc.assert(
      fc.property(scenarioArb, ({ ctx, readings, order, batches, restarts, trims, resend }) => {
        const store = new Map<string, TimelineReading>()
        const validSorted = (kind: Kind) =>
          [...store.values()]
            .filter((r) => r.kind === kind && isValid(r))
            .sort((a, b) => a.recordedAt - b.recordedAt)
        let tl: MeterTimeline | null = null
        const stream = [...order, ...resend.filter((i) => i < order.length).map((i) => order[i]!)]
        let pos = 0
        let b = 0
        while (pos < stream.length) {
          const size = batches[b % batches.length]!
          const batch = stream.slice(pos, pos + size)
          pos += size
          if (!tl || restarts[b % restarts.length]) {
            const initial: TimelineReading[] = []
            for (const kind of ['consumption', 'saldo'] as const)
              initial.push(...validSorted(kind).slice(-120))
            tl = new MeterTimeline(ctx, initial)
          }
          for (const r of batch) {
            if (store.has(key(r))) continue // idempotency is the store's job
            if (!tl.isAppend(r.kind, r.recordedAt)) {
              const { before, after } = tl.neighbourhood(r.kind, r.recordedAt)
              const load: TimelineReading[] = []
              for (const kind of ['consumption', 'saldo'] as const) {
                const arr = validSorted(kind)
                load.push(...arr.filter((x) => x.recordedAt < r.recordedAt).slice(-before))
                load.push(...arr.filter((x) => x.recordedAt >= r.recordedAt).slice(0, after))
              }
              tl.load(load)
            }
            const res = tl.insert({ ...r })
            if (res.duplicate) return false
            store.set(key(r), { ...r, flags: [...res.flags] })
            for (const c of res.changed) {
              if (!store.has(key(c))) return false
              store.set(key(c), c)
            }
          }
          const keep = trims[b % trims.length]
          if (keep !== null && keep !== undefined) tl.trim(keep)
          b++
        }
        const exp = expected(readings, ctx)
        if (store.size !== readings.length) return false
        for (const r of store.values()) if (r.flags.join(',') !== exp.get(key(r))) return false
        return true
      }),
      { numRuns: 150 },
    )
    t.pass('property held')
  },
)
