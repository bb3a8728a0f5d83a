// A wireless telegram heard by several gateways arrives once per gateway, each with its own
// recorded_at. A repeat is the same meter (workspace + decoded identifier), the same access
// number and the same application bytes (the decoder's fingerprint) within a window
// (TELEGRAM_REPEAT_WINDOW_MS, default 10 min, 0 = off): it is answered `duplicate` and not
// stored. The first telegram claims a coordination key holding its recorded_at; a later one
// with the same recorded_at is not a repeat but a retry, and goes on to the spec's
// (meter, kind, recorded_at) identity (so a retry after a failed request still stores it).
import type { Coord } from '../coord/coord.js'

export interface TelegramSighting {
  ws: number
  identifier: string
  fingerprint: number
  recordedAt: number
}

/** Per sighting: null when it is new (or a retry of the first), else the first's recorded_at. */
export async function findRepeats(
  coord: Coord,
  windowMs: number,
  sightings: TelegramSighting[],
): Promise<(number | null)[]> {
  if (windowMs <= 0 || sightings.length === 0) return sightings.map(() => null)
  const keys = sightings.map((s) => `tgrep:${s.ws}:${s.identifier}:${s.fingerprint.toString(16)}`)
  const held = await coord.claimValues(
    keys,
    sightings.map((s) => s.recordedAt),
    windowMs,
  )
  return held.map((first, i) => {
    if (first === null || first === sightings[i]!.recordedAt) return null
    return Number.isFinite(first) ? first : -1
  })
}
