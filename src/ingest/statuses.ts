// The canonical device-status vocabulary of api-v1.md. Every profile maps its raw flags
// onto this set; a flag it cannot interpret becomes `error` (surfaced, never dropped).
export const CANONICAL_STATUSES = [
  'leak',
  'burst',
  'dry',
  'reverse',
  'tamper',
  'low_battery',
  'error',
] as const
export type CanonicalStatus = (typeof CANONICAL_STATUSES)[number]

const known = new Set<string>(CANONICAL_STATUSES)
export const isCanonicalStatus = (s: string): s is CanonicalStatus => known.has(s)
