// Readings of a few meters for the property tests of overlapping requests: drawn by
// fast-check, one per (meter, kind, 15-minute slot), then shuffled and dealt into requests
// by a seeded generator, so a failing case replays from its seed.
import fc from 'fast-check'

export interface DrawnReading {
  meter: number
  kind: 'saldo' | 'consumption'
  slot: number
  value: number
}

/** Up to `max` readings of `meters` meters over 91 slots of 15 minutes. */
export const drawnReadings = (meters: number, max: number) =>
  fc.array(
    fc.record({
      meter: fc.integer({ min: 0, max: meters - 1 }),
      kind: fc.constantFrom<'saldo' | 'consumption'>('saldo', 'consumption'),
      slot: fc.integer({ min: 0, max: 90 }),
      value: fc.integer({ min: -5, max: 400 }),
    }),
    { minLength: 1, maxLength: max },
  )

export interface DealtItem {
  /** The meter's number (the caller names it per set of readings). */
  m: number
  kind: string
  value: number
  unit: string
  recorded_at: string
}

/** The drawn readings as report items, the first of each identity only; `at(minutes)`. */
export function itemsOf(raw: DrawnReading[], at: (min: number) => string): DealtItem[] {
  const seen = new Set<string>()
  return raw
    .filter((r) => {
      const k = `${r.meter}${r.kind}${r.slot}`
      return !seen.has(k) && seen.add(k)
    })
    .map((r) => ({
      m: r.meter,
      kind: r.kind,
      value: r.value,
      unit: 'kwh',
      recorded_at: at(r.slot * 15),
    }))
}

/** The items in recorded_at order (the reference: one sorted batch). */
export const sortedItems = (items: DealtItem[]) =>
  [...items].sort((x, y) => x.recorded_at.localeCompare(y.recorded_at))

/** A seeded generator of integers below n, a shuffle by it, and a deal into requests. */
export function dealer(seed: number) {
  let x = seed
  const below = (n: number) => {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    // The high bits: the low bit of this generator alternates.
    return (x >>> 12) % n
  }
  const shuffle = <T>(arr: T[]): T[] => {
    const out = [...arr]
    for (let i = out.length - 1; i > 0; i--) {
      const j = below(i + 1)
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    return out
  }
  /** `items` dealt at random into up to `requests` bodies (the empty ones left out). */
  const deal = <T>(items: readonly T[], requests: number): T[][] => {
    const bodies: T[][] = Array.from({ length: requests }, () => [])
    for (const it of items) bodies[below(requests)]!.push(it)
    return bodies.filter((b) => b.length)
  }
  return { below, shuffle, deal }
}
