// The lists a turn keeps (its readings, rows and restated neighbours) and the key of a
// reading within one meter: shared by the actor and the phases that run outside it.

/** The empty array turns start with and go back to: frozen, so a push onto it throws. */
export const NONE = Object.freeze([]) as never[]

/**
 * `arr` with `x` appended. The first element goes into a literal of one: an empty array's
 * first push reserves room for 16, and most turns of a gateway request hold one reading.
 */
export function append<T>(arr: T[], x: T): T[] {
  if (arr.length === 0) return [x]
  arr.push(x)
  return arr
}

/** A reading's key within its meter: kind and recorded_at (epoch ms). */
export const readingKey = (kind: string, t: number) => `${kind}:${t}`
