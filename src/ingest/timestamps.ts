// `recorded_at`: ISO 8601 date-time; without an offset it is UTC (storage is UTC).
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?$/

/** Epoch ms of an ISO 8601 date-time, or null when it is not one (or not a real date). */
export function parseIsoTimestamp(s: string): number | null {
  const m = ISO.exec(s)
  if (!m) return null
  const [, y, mo, d, h, mi, sec = '00', frac = '', zone = 'Z'] = m
  const ms = frac ? Number(frac.slice(1, 4).padEnd(3, '0')) : 0
  const base = Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +sec!, ms)
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
