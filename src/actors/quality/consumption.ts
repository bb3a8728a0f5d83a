import type { Kind } from '../../domain/quality.js'

/** negative_consumption: a consumption reading whose canonical value is < 0 (strictly). */
export function isNegativeConsumption(kind: Kind, v: number): boolean {
  return kind === 'consumption' && v < 0
}
