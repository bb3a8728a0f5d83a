// Query parameters written into the SQL text as typed literals, for the embedded engine.
// chdb-node runs every parameterised query of the process one after another (the engine's
// substitution is process-wide state there), so look-ups that could share the read sessions
// queued behind each other and behind every data team's query: the four queries that load a
// meter's window, a key's quarantine check, a report's SELECT. The placeholders of the types
// below become literals of exactly that type (`CAST(…, 'UInt64')`, a quoted string), and a
// value can never leave its literal: integers are checked digit by digit and range, strings
// are quoted with every quote, backslash and NUL escaped. Anything else (another type, a
// value that does not fit it, a missing parameter, a statement grown too long) is left to
// the engine's own binding. A ClickHouse server gets its parameters the same way where one
// is longer than its HTTP form fields take (server.ts).
import type { Params } from './sql.js'

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g

/**
 * The engine parses at most `max_query_size` bytes of SQL (`MAX_QUERY_SIZE` on our sessions,
 * chdb.ts), and bound values do not count towards it: a statement that would grow past this
 * stays bound.
 */
export const MAX_INLINE_BYTES = 32 << 20
/** The sessions' `max_query_size` (chdb.ts): room above `MAX_INLINE_BYTES`. */
export const MAX_QUERY_SIZE = 2 * MAX_INLINE_BYTES

/** `IN` right before a placeholder: its array may be a bare literal (`literal`). */
const IN_BEFORE = /\bIN\s*$/i

/** A DateTime64 value as the store writes it (chTime): digits and separators only. */
const DATETIME_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?$/

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

/** A DateTime64 value (its text as the store writes it) as a string literal, or null. */
function timeLiteral(v: unknown): string | null {
  return typeof v === 'string' && DATETIME_TEXT.test(v) ? `'${v}'` : null
}

/** Arrays longer than this are typed element by element (`arrayLiteral`). */
const CAST_MAX_ITEMS = 10_000

/**
 * One value of `type` as a literal, or null when this binder does not take it. The array of
 * an `IN` (`inSet`) is a bare literal: the engine took a CAST of a large array literal far
 * longer than the array itself (70,000 strings: 48 s against 0.2 s; 200,000 integers: 103 s
 * against 0.5 s; scratch on chDB 26), and its binding makes that CAST too. An IN converts the
 * elements to its left side's type anyway, so there the array of DateTime64 values is its
 * strings (checked to be only digits and separators).
 */
function literal(v: unknown, type: string, inSet: boolean): string | null {
  if (type === 'String') return scalar(v, type)
  const inner = /^Array\((.+)\)$/.exec(type)?.[1]
  if (!inner) {
    const n = integerLiteral(v, type)
    return n === null ? null : `CAST(${n}, '${type}')`
  }
  if (!Array.isArray(v)) return null
  const times = /^DateTime64\(/.test(inner)
  // Checked before the elements: an empty array of another type is the engine's too.
  if (inner !== 'String' && !INTEGER_RANGES[inner] && !times) return null
  const items: string[] = []
  for (const x of v) {
    const item = times ? timeLiteral(x) : scalar(x, inner)
    if (item === null) return null
    items.push(item)
  }
  return arrayLiteral(items, inner, inSet)
}

/**
 * An array of `inner` from its elements' literals. An array of strings is exactly
 * Array(String) as it is; elsewhere a typed array is a CAST of the literal while short, and
 * past `CAST_MAX_ITEMS` (and for DateTime64, whose elements are strings) each element is
 * cast by arrayMap: 200,000 integers 1.9 s against 103 s for the CAST (scratch).
 */
function arrayLiteral(items: string[], inner: string, inSet: boolean): string {
  const bare = `[${items.join(',')}]`
  if (!items.length) return `CAST([], ${stringLiteral(`Array(${inner})`)})`
  if (inSet || inner === 'String') return bare
  if (INTEGER_RANGES[inner] && items.length <= CAST_MAX_ITEMS)
    return `CAST(${bare}, 'Array(${inner})')`
  return `arrayMap(x -> CAST(x, ${stringLiteral(inner)}), ${bare})`
}

/**
 * `sql` with every `{name:Type}` placeholder replaced by its parameter as a literal of that
 * type; null when any placeholder is one this binder leaves to the engine.
 */
export function inlineParams(sql: string, params: Params): string | null {
  let unsupported = false
  const out = sql.replace(PLACEHOLDER, (whole, name: string, rawType: string, at: number) => {
    const type = rawType.trim()
    const inSet = IN_BEFORE.test(sql.slice(Math.max(0, at - 8), at))
    const lit = Object.hasOwn(params, name) ? literal(params[name], type, inSet) : null
    if (lit === null) unsupported = true
    return lit ?? whole
  })
  if (unsupported) return null
  return out.length * 3 <= MAX_INLINE_BYTES || Buffer.byteLength(out) <= MAX_INLINE_BYTES
    ? out
    : null
}
