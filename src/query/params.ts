// Query-string parsing shared by the query endpoints: every bad value becomes a 422 keyed by
// the parameter's name (never a 500).
import type { FieldErrorCollector } from '../errors.js'
import { parseIsoTime } from '../domain/time.js'

export const DEFAULT_PER_PAGE = 100
/** Largest accepted per_page on /readings, /statusReports (documented in docs/query.md). */
export const MAX_PER_PAGE = 1000
export const MAX_RANGE_MS = 366 * 86_400_000
export const DEFAULT_RANGE_MS = 7 * 86_400_000

const INT_RE = /^[0-9]+$/

/** Parses an integer parameter; records an error (and returns undefined) when invalid. */
export function intParam(
  q: URLSearchParams,
  name: string,
  errs: FieldErrorCollector,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const raw = q.get(name)
  if (raw === null) return undefined
  const v = raw.trim()
  if (!INT_RE.test(v) || !Number.isSafeInteger(Number(v))) {
    errs.add(name, `The ${name} field must be an integer.`)
    return undefined
  }
  const n = Number(v)
  if (n < min) errs.add(name, `The ${name} field must be at least ${min}.`)
  else if (n > max) errs.add(name, `The ${name} field must not be greater than ${max}.`)
  else return n
  return undefined
}

export function enumParam<T extends string>(
  q: URLSearchParams,
  name: string,
  allowed: readonly T[],
  errs: FieldErrorCollector,
): T | undefined {
  const raw = q.get(name)
  if (raw === null) return undefined
  if (!(allowed as readonly string[]).includes(raw)) {
    errs.add(name, `The selected ${name} is invalid; allowed: ${allowed.join(', ')}.`)
    return undefined
  }
  return raw as T
}

export function pageParams(
  q: URLSearchParams,
  errs: FieldErrorCollector,
): { page: number; perPage: number } {
  const page = intParam(q, 'page', errs, 1, 1_000_000_000) ?? 1
  const perPage = intParam(q, 'per_page', errs, 1, MAX_PER_PAGE) ?? DEFAULT_PER_PAGE
  return { page, perPage }
}

/**
 * from/to: defaults `to` = now, `from` = `to` − 7 days; `from` after `to` and ranges over
 * 366 days are 422 (keyed `from` and `to`). Offset-less times are wall time in `tz`.
 */
export function rangeParams(
  q: URLSearchParams,
  errs: FieldErrorCollector,
  now: number,
  tz: string | null,
): { from: number; to: number } | null {
  const parse = (name: string): number | undefined | null => {
    const raw = q.get(name)
    if (raw === null) return undefined
    const t = parseIsoTime(raw, tz)
    if (t === null) errs.add(name, `The ${name} field must be an ISO 8601 date or date-time.`)
    return t
  }
  const f = parse('from')
  const t = parse('to')
  if (f === null || t === null) return null
  const to = t ?? now
  const from = f ?? to - DEFAULT_RANGE_MS
  if (from > to) {
    errs.add('from', 'The from field must be a time before or equal to to.')
    errs.add('to', 'The to field must be a time after or equal to from.')
    return null
  }
  if (to - from > MAX_RANGE_MS) {
    errs.add('from', 'The range from..to must not exceed 366 days.')
    errs.add('to', 'The range from..to must not exceed 366 days.')
    return null
  }
  return { from, to }
}

export function meta(page: number, perPage: number, total: number) {
  return {
    current_page: page,
    per_page: perPage,
    total,
    last_page: Math.max(1, Math.ceil(total / perPage)),
  }
}
