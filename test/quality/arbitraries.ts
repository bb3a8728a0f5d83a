import fc from 'fast-check'
import type { MeterQualityContext, TimelineReading } from '../../src/actors/quality/index.js'
import { MIN, T0 } from './helpers.js'

const SLOT = 15 * MIN

/** A random meter history: saldo random walk (wrapping at rolloverMax), consumption that often matches it. */
export const historyArb = fc
  .record({
    rolloverMax: fc.constantFrom(null, 1000, 5000),
    nSlots: fc.integer({ min: 0, max: 260 }),
    exchanges: fc.array(
      fc.record({
        slot: fc.integer({ min: 0, max: 260 }),
        half: fc.boolean(),
        oldFinal: fc.option(fc.integer({ min: 0, max: 2000 }), { nil: null }),
        newInitial: fc.option(fc.integer({ min: 0, max: 50 }), { nil: null }),
      }),
      { maxLength: 2 },
    ),
    seed: fc.array(
      fc.record({
        cons: fc.integer({ min: 0, max: 9 }),
        saldo: fc.integer({ min: 0, max: 9 }),
        inc: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 3000 })),
        odd: fc.integer({ min: 0, max: 19 }),
        noise: fc.integer({ min: -3, max: 3 }),
      }),
      { minLength: 260, maxLength: 260 },
    ),
  })
  .map(({ rolloverMax, nSlots, exchanges, seed }) => {
    const ctx: MeterQualityContext = {
      rolloverMax,
      expectedIntervalMinutes: 15,
      exchanges: exchanges.map((e) => ({
        exchangedAt: T0 + e.slot * SLOT + (e.half ? SLOT / 2 : 0),
        oldFinalValue: e.oldFinal,
        newInitialValue: e.newInitial,
      })),
    }
    const readings: TimelineReading[] = []
    let saldo = 100
    for (let k = 0; k < nSlots; k++) {
      const s = seed[k]!
      const inc = s.odd === 0 ? s.inc * 100 : s.inc % 40
      saldo += inc
      if (s.odd === 1) saldo = Math.max(0, saldo - 50) // unexplained drop
      if (rolloverMax !== null) saldo %= rolloverMax
      const at = T0 + k * SLOT
      if (s.cons > 1) {
        const v = s.odd === 2 ? -5 : s.odd === 3 ? null : inc + (s.cons === 9 ? s.noise : 0)
        readings.push({
          kind: 'consumption',
          recordedAt: at,
          canonicalValue: v,
          unitMismatch: s.odd === 4,
          flags: [],
        })
      }
      if (s.saldo > 2) {
        readings.push({
          kind: 'saldo',
          recordedAt: at,
          canonicalValue: s.odd === 5 ? null : saldo,
          unitMismatch: s.odd === 6,
          flags: [],
        })
      }
    }
    return { ctx, readings }
  })
