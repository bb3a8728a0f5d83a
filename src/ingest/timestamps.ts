// `recorded_at`: ISO 8601 date-time; without an offset it is UTC (storage is UTC).
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?$/

const DIGIT_POSITIONS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22]
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const leap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0

/** Date.UTC without its quirk of reading years 0–99 as 1900–1999. */
function utc(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number) {
  const t = Date.UTC(y, mo, d, h, mi, s, ms)
  if (y >= 100) return t
  const date = new Date(t)
  date.setUTCFullYear(y)
  return date.getTime()
}

/** The number written by `len` ASCII digits of `s` from `i` (checked as digits before). */
function digits(s: string, i: number, len: number): number {
  let v = 0
  for (let k = i; k < i + len; k++) v = v * 10 + s.charCodeAt(k) - 48
  return v
}

// The last date part read (`YYYY-MM-DD`, valid) and its midnight in epoch ms: the readings
// of a batch mostly share their day, and Date.UTC per reading was most of this parse.
let lastDate = ''
let lastDayMs = 0
// The last canonical text read and its time: a gateway's request often carries one
// recorded_at for all its meters (interval meters report on the quarter hour). Null until
// one is read: '' must not read as the epoch.
let lastText: string | null = null
let lastMs = 0

/**
 * `YYYY-MM-DDTHH:MM:SS.sssZ` (what `toISOString` writes, so what most devices send) read
 * digit by digit: this runs for every reading and the regex below cost 3× as much.
 * Returns undefined for any other form, null for an impossible date.
 */
function parseCanonical(s: string): number | null | undefined {
  if (
    s.length !== 24 ||
    s.charCodeAt(4) !== 45 ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 84 ||
    s.charCodeAt(13) !== 58 ||
    s.charCodeAt(16) !== 58 ||
    s.charCodeAt(19) !== 46 ||
    s.charCodeAt(23) !== 90
  )
    return undefined
  for (const i of DIGIT_POSITIONS) {
    const c = s.charCodeAt(i)
    if (c < 48 || c > 57) return undefined
  }
  const h = digits(s, 11, 2)
  const mi = digits(s, 14, 2)
  const sec = digits(s, 17, 2)
  if (h > 23 || mi > 59 || sec > 59) return null
  if (lastDate === '' || !s.startsWith(lastDate)) {
    const y = digits(s, 0, 4)
    const mo = digits(s, 5, 2)
    const d = digits(s, 8, 2)
    if (mo < 1 || mo > 12 || d < 1) return null
    if (d > (mo === 2 && leap(y) ? 29 : DAYS[mo - 1]!)) return null
    lastDayMs = utc(y, mo - 1, d, 0, 0, 0, 0)
    lastDate = s.slice(0, 10)
  }
  return lastDayMs + ((h * 60 + mi) * 60 + sec) * 1000 + digits(s, 20, 3)
}

/** Epoch ms of an ISO 8601 date-time, or null when it is not one (or not a real date). */
export function parseIsoTimestamp(s: string): number | null {
  if (s === lastText) return lastMs
  const fast = parseCanonical(s)
  if (fast !== undefined) {
    if (fast !== null) {
      lastText = s
      lastMs = fast
    }
    return fast
  }
  const m = ISO.exec(s)
  if (!m) return null
  const [, y, mo, d, h, mi, sec = '00', frac = '', zone = 'Z'] = m
  const ms = frac ? Number(frac.slice(1, 4).padEnd(3, '0')) : 0
  const base = utc(+y!, +mo! - 1, +d!, +h!, +mi!, +sec!, ms)
  const check = new Date(base)
  if (
    check.getUTCMonth() !== +mo! - 1 ||
    check.getUTCDate() !== +d! ||
    +h! > 23 ||
    +mi! > 59 ||
    +sec! > 59
  )
    return null
  if (zone === 'Z' || zone === 'z') return base
  const sign = zone[0] === '-' ? -1 : 1
  const digits = zone.slice(1).replace(':', '')
  const offset = (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000
  return base - sign * offset
}
