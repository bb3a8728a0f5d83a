// JSONata helpers for mappings (webhook endpoints and MQTT subscriptions). They are
// registered on every compiled expression, so presets and operators' own mappings can use
// them: `$base64ToHex(data)`, `$isWmbusTelegram(hex)`, `$wmbusmetersTotal($)`, ...
//
// They never throw on odd input: a value they cannot read gives undefined, which leaves the
// mapped field out (the item is then `rejected_unmappable` naming that field).

type Registrable = {
  registerFunction(name: string, impl: (...args: any[]) => unknown, signature?: string): void
}

/** Standard or URL-safe base64 → upper-case hex; undefined when not base64. */
export function base64ToHex(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length === 0) return undefined
  const s = v.trim().replace(/-/g, '+').replace(/_/g, '/')
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(s)) return undefined
  const hex = Buffer.from(s, 'base64').toString('hex').toUpperCase()
  return hex.length ? hex : undefined
}

/** Hex → standard base64; undefined when not hex. */
export function hexToBase64(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined
  const s = v.trim().replace(/^0x/i, '')
  if (s.length === 0 || s.length % 2 || !/^[0-9A-Fa-f]+$/.test(s)) return undefined
  return Buffer.from(s, 'hex').toString('base64')
}

/** C-fields a wM-Bus meter sends with (SND_NR, SND_IR, ACC_NR, ACC_DMD, SND_UD). */
const WMBUS_C_FIELDS = new Set([0x44, 0x46, 0x47, 0x48, 0x08, 0x18, 0x28, 0x38, 0x06, 0x53, 0x73])

/**
 * True when `hex` looks like one wM-Bus telegram as `wmbus_oms` takes it: L-field equal to
 * the remaining length (CRCs removed), a meter C-field and a full link-layer header. A
 * LoRaWAN payload that passes this goes to `wmbus_oms`; anything else stays an ordinary
 * decoded uplink.
 */
export function isWmbusTelegram(hex: unknown): boolean {
  if (typeof hex !== 'string' || hex.length < 24 || hex.length % 2) return false
  if (!/^[0-9A-Fa-f]+$/.test(hex)) return false
  const l = parseInt(hex.slice(0, 2), 16)
  const c = parseInt(hex.slice(2, 4), 16)
  return l === hex.length / 2 - 1 && WMBUS_C_FIELDS.has(c)
}

/** Normalises a telegram written as `0x…`, with spaces, or with a leading `_`. */
export function telegramHex(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined
  const s = v.trim().replace(/^0x/i, '').replace(/^_/, '').replace(/\s+/g, '').toUpperCase()
  return s.length >= 2 && s.length % 2 === 0 && /^[0-9A-F]+$/.test(s) ? s : undefined
}

/**
 * The meter register of one wmbusmeters JSON message: the first field named
 * `total_…_m3` or `total_…_kwh` (wmbusmeters' naming: quantity suffix = unit), preferring
 * the plain `total_m3` / `total_kwh` / `total_energy_consumption_kwh`. Undefined when the
 * message carries none (for example a meter that only sends alarms).
 */
export function wmbusmetersTotal(msg: unknown): { value: number; unit: string } | undefined {
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return undefined
  const o = msg as Record<string, unknown>
  const preferred = ['total_m3', 'total_energy_consumption_kwh', 'total_kwh']
  const keys = [
    ...preferred.filter((k) => k in o),
    ...Object.keys(o).filter((k) => /^total(_[a-z0-9]+)*_(m3|kwh)$/.test(k)),
  ]
  for (const k of keys) {
    const v = o[k]
    if (typeof v === 'number' && Number.isFinite(v))
      return { value: v, unit: k.endsWith('_m3') ? 'm3' : 'kwh' }
  }
  return undefined
}

/**
 * A timestamp as ISO 8601 with an offset. wmbusmeters writes `2024-05-01T10:00:00Z` and, in
 * its local format, `2024-05-01 10:00.00` (UTC unless told otherwise); rtl-wmbus lines carry
 * `2024-05-01 10:00:00.000`. Already-ISO strings are returned unchanged.
 */
export function isoTime(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined
  const s = v.trim()
  const m =
    /^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2})[:.](\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})?$/.exec(s)
  if (!m) return undefined
  return `${m[1]}T${m[2]}:${m[3]}:${m[4]}${m[5] ?? ''}${m[6] ?? 'Z'}`
}

/** Registers every helper on a compiled JSONata expression. */
export function registerMappingHelpers(expr: Registrable): void {
  expr.registerFunction('base64ToHex', base64ToHex, '<j?:j>')
  expr.registerFunction('hexToBase64', hexToBase64, '<j?:j>')
  expr.registerFunction('isWmbusTelegram', isWmbusTelegram, '<j?:b>')
  expr.registerFunction('telegramHex', telegramHex, '<j?:j>')
  expr.registerFunction('wmbusmetersTotal', wmbusmetersTotal, '<j?:j>')
  expr.registerFunction('isoTime', isoTime, '<j?:j>')
}
