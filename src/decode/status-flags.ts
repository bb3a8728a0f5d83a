// A telegram's status as a reading carries it: the TPL status byte and the error-flag records
// as raw flags and canonical statuses (docs/decoders.md, "Status"). The main thread maps the
// two numbers a worker sends for each telegram (wire.ts), so this stays cheap for the common
// telegram without a flag.

const TPL_FLAGS: [number, string, string | null][] = [
  [0x04, 'power_low', 'low_battery'],
  [0x08, 'permanent_error', 'error'],
  [0x10, 'temporary_error', 'error'],
  [0x20, 'manufacturer_status_bit5', 'error'],
  [0x40, 'manufacturer_status_bit6', 'error'],
  [0x80, 'manufacturer_status_bit7', 'error'],
]

/** Raw flags of the TPL status byte and error-flag records, and their canonical statuses. */
export function statusFlags(
  st: number,
  errFlags: number,
): { rawFlags: string[]; statuses: string[] } {
  // Most telegrams: no flag (no Set made for them; this runs for every telegram).
  if (st <= 0 && errFlags <= 0) return { rawFlags: [], statuses: [] }
  const rawFlags: string[] = []
  const set = new Set<string>()
  if (st > 0) {
    const app = st & 3
    if (app === 1) rawFlags.push('application_busy')
    else if (app === 2) {
      rawFlags.push('application_error')
      set.add('error')
    } else if (app === 3) {
      rawFlags.push('abnormal_condition')
      set.add('error')
    }
    for (const [bit, name, canon] of TPL_FLAGS) {
      if (st & bit) {
        rawFlags.push(name)
        if (canon) set.add(canon)
      }
    }
  }
  if (errFlags > 0) {
    for (let b = 0; b < 32; b++) {
      if ((errFlags >>> b) & 1) rawFlags.push(`error_flag_bit${b}`)
    }
    set.add('error')
  }
  return { rawFlags, statuses: [...set] }
}
