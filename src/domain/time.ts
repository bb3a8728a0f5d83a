// Time helpers of the query API: ISO parsing (offset-less times read in the query's zone),
// time-zone validation, local ISO formatting, and whether a zone keeps whole-hour offsets
// (then UTC-hour rollup buckets fall into exactly one local hour and day).
const HOUR = 3_600_000

const formatters = new Map<string, Intl.DateTimeFormat>()
function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
    formatters.set(tz, f)
  }
  return f
}

/** True for an IANA zone name both Node and ClickHouse understand (region/city or UTC). */
export function isValidTimeZone(tz: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+)*$/.test(tz) || tz.length > 64) return false
  try {
    formatter(tz)
    return true
  } catch {
    return false
  }
}

/** Offset of `tz` from UTC at instant `t`, in milliseconds (whole seconds). */
export function offsetMs(tz: string, t: number): number {
  const p: Record<string, number> = {}
  for (const x of formatter(tz).formatToParts(new Date(Math.floor(t / 1000) * 1000)))
    if (x.type !== 'literal') p[x.type] = Number(x.value)
  const local = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!)
  return local - Math.floor(t / 1000) * 1000
}

const pad = (n: number, w = 2) => String(Math.abs(n)).padStart(w, '0')

/** `t` as ISO 8601 with the zone's offset, e.g. `2024-03-31T03:00:00.000+02:00`. */
export function isoLocal(t: number, offMs: number): string {
  const base = new Date(t + offMs).toISOString().slice(0, 23)
  const m = Math.round(offMs / 60_000)
  return `${base}${m < 0 ? '-' : '+'}${pad(Math.trunc(m / 60))}:${pad(m % 60)}`
}

const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/

/**
 * Parses an ISO 8601 date or date-time. Without an offset it is wall time in `tz` (UTC when
 * no zone was given). Returns epoch ms or null when it is not a valid ISO 8601 time.
 */
export function parseIsoTime(s: string, tz: string | null): number | null {
  const m = ISO_RE.exec(s.trim())
  if (!m) return null
  const [, y, mo, d, h = '0', mi = '0', se = '0', frac = '', off] = m
  const ms = Number((frac + '000').slice(0, 3))
  const wall = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se), ms)
  const check = new Date(wall)
  if (
    !Number.isFinite(wall) ||
    check.getUTCFullYear() !== Number(y) ||
    check.getUTCMonth() !== Number(mo) - 1 ||
    check.getUTCDate() !== Number(d) ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(se) > 59
  )
    return null
  if (off) {
    if (off === 'Z') return wall
    const sign = off[0] === '-' ? -1 : 1
    const digits = off.slice(1).replace(':', '')
    const oh = Number(digits.slice(0, 2))
    const om = Number(digits.slice(2))
    if (oh > 23 || om > 59) return null
    return wall - sign * (oh * 60 + om) * 60_000
  }
  if (!tz) return wall
  // Wall time in tz: two passes settle the offset (a skipped DST hour lands after the gap).
  let t = wall - offsetMs(tz, wall)
  t = wall - offsetMs(tz, t)
  return t
}

const wholeHourCache = new Map<string, boolean>()

/** True when `tz` has a whole-hour UTC offset at every instant of [from, to]. */
export function wholeHourZone(tz: string, from: number, to: number): boolean {
  const y0 = new Date(from).getUTCFullYear() - 1
  const y1 = new Date(to).getUTCFullYear() + 1
  for (let y = y0; y <= y1; y++) {
    const key = `${tz}|${y}`
    let ok = wholeHourCache.get(key)
    if (ok === undefined) {
      ok = true
      const start = Date.UTC(y, 0, 1)
      const end = Date.UTC(y + 1, 0, 1)
      // Offsets change at most a few times a year and every regime lasts longer than 6 h.
      for (let t = start; t < end && ok; t += 6 * HOUR) if (offsetMs(tz, t) % HOUR !== 0) ok = false
      wholeHourCache.set(key, ok)
    }
    if (!ok) return false
  }
  return true
}
