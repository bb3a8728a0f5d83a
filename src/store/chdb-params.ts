// Query parameters written into the SQL text as typed literals, for the embedded engine.
// chdb-node runs every parameterised query of the process one after another (the engine's
// substitution is process-wide state there), so look-ups that could share the read sessions
// queued behind each other and behind every data team's query: the four queries that load a
// meter's window, a key's quarantine check, a report's SELECT. The placeholders of the types
// below become literals of exactly that type (`CAST(…, 'UInt64')`, a quoted string), and a
// value can never leave its literal: integers are checked digit by digit and range, strings
// are quoted with every quote, backslash and NUL escaped. Anything else (another type, a
// value that does not fit it, a missing parameter, a statement grown too long) is left to
// the engine's own binding.
import type { Params } from './sql.js'

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g

/**
 * The engine parses at most `max_query_size` bytes of SQL (256 KiB by default), and bound
 * values do not count towards it: a statement that would grow past this stays bound.
 */
export const MAX_INLINE_BYTES = 128 << 10

const INTEGER_RANGES: Record<string, readonly [bigint, bigint]> = {
  UInt8: [0n, 255n],
  UInt16: [0n, 65_535n],
  UInt32: [0n, 4_294_967_295n],
  UInt64: [0n, 18_446_744_073_709_551_615n],
  Int8: [-128n, 127n],
  Int16: [-32_768n, 32_767n],
  Int32: [-2_147_483_648n, 2_147_483_647n],
  Int64: [-9_223_372_036_854_775_808n, 9_223_372_036_854_775_807n],
}

const INTEGER_TEXT = /^-?\d{1,20}$/

/** An integer of `type` as a literal, or null when `v` is not one. */
function integerLiteral(v: unknown, type: string): string | null {
  const range = INTEGER_RANGES[type]
  if (!range) return null
  let text: string
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) return null
    text = String(v)
  } else if (typeof v === 'bigint') text = v.toString()
  else if (typeof v === 'boolean') text = v ? '1' : '0'
  else if (typeof v === 'string' && INTEGER_TEXT.test(v)) text = v
  else return null
  const n = BigInt(text)
  return n >= range[0] && n <= range[1] ? String(n) : null
}

/** A ClickHouse string literal holding exactly `s`. */
export function stringLiteral(s: string): string {
  return `'${s.replace(/[\\'\0]/g, (c) => (c === '\0' ? '\\0' : `\\${c}`))}'`
}

/** A string or an integer of `type` as a bare literal, or null when `v` is not one. */
function scalar(v: unknown, type: string): string | null {
  if (type === 'String') return typeof v === 'string' ? stringLiteral(v) : null
  return integerLiteral(v, type)
}

/** One value of `type` as a literal, or null when this binder does not take it. */
function literal(v: unknown, type: string): string | null {
  if (type === 'String') return scalar(v, type)
  const inner = /^Array\((.+)\)$/.exec(type)?.[1]
  if (!inner) {
    const n = integerLiteral(v, type)
    return n === null ? null : `CAST(${n}, '${type}')`
  }
  // Checked before the elements: an empty array of another type is the engine's too.
  if (!Array.isArray(v) || (inner !== 'String' && !INTEGER_RANGES[inner])) return null
  const items: string[] = []
  for (const x of v) {
    const item = scalar(x, inner)
    if (item === null) return null
    items.push(item)
  }
  return `CAST([${items.join(',')}], '${type}')`
}

/**
 * `sql` with every `{name:Type}` placeholder replaced by its parameter as a literal of that
 * type; null when any placeholder is one this binder leaves to the engine.
 */
export function inlineParams(sql: string, params: Params): string | null {
  let unsupported = false
  const out = sql.replace(PLACEHOLDER, (whole, name: string, rawType: string) => {
    const type = rawType.trim()
    const lit = Object.hasOwn(params, name) ? literal(params[name], type) : null
    if (lit === null) unsupported = true
    return lit ?? whole
  })
  if (unsupported) return null
  return out.length * 3 <= MAX_INLINE_BYTES || Buffer.byteLength(out) <= MAX_INLINE_BYTES
    ? out
    : null
}
