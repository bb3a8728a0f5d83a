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

/** The coordination key of a sighting's telegram. */
export const repeatKey = (s: TelegramSighting) =>
  `tgrep:${s.ws}:${s.identifier}:${s.fingerprint.toString(16)}`

/**
 * Per sighting: null when it is new (or a retry of the first), else the first's recorded_at.
 * `claimed[i]` is set true where this call claimed the key (a first sighting, not a retry):
 * if its reading is not stored after all, `releaseClaims` gives the key up.
 */
export async function findRepeats(
  coord: Coord,
  windowMs: number,
  sightings: TelegramSighting[],
  claimed?: boolean[],
): Promise<(number | null)[]> {
  if (windowMs <= 0 || sightings.length === 0) return sightings.map(() => null)
  const held = await coord.claimValues(
    sightings.map(repeatKey),
    sightings.map((s) => s.recordedAt),
    windowMs,
  )
  if (claimed) held.forEach((first, i) => (claimed[i] = first === null))
  return held.map((first, i) => {
    if (first === null || first === sightings[i]!.recordedAt) return null
    return Number.isFinite(first) ? first : -1
  })
}

/**
 * Gives up the keys of first sightings whose reading was not stored (the request failed, or
 * the item was refused: a provisioning limit, say), so a later gateway's report of the same
 * telegram is stored, not answered `duplicate` of nothing. A key another sighting holds by
 * now is left.
 */
export async function releaseClaims(coord: Coord, sightings: TelegramSighting[]): Promise<void> {
  if (sightings.length === 0) return
  await coord.releaseValues(
    sightings.map(repeatKey),
    sightings.map((s) => s.recordedAt),
  )
}
