// The repeat check (telegram-repeats.ts) speaks of sightings and keys; step 1 needs it on its
// items: a repeat answered `duplicate`, a first sighting holding its claim until it is stored
// or given up, and a repeat paired with its first sighting when both are in one batch.
import type { Coord } from '../coord/coord.js'
import { findRepeats, releaseClaims, repeatKey, type TelegramSighting } from './telegram-repeats.js'
import type { PreparedItem } from './prepared-item.js'

export interface RepeatCheck {
  coord: Coord
  windowMs: number
}

/**
 * The repeat check (telegram-repeats.ts) on telegrams by their fingerprints: a repeat gets
 * its `duplicate`, a first sighting its claim. Returns each repeat whose first sighting is
 * an item of this batch, with that item.
 */
export async function markRepeats(
  check: RepeatCheck,
  ws: number,
  items: PreparedItem[],
  fingerprints: number[],
): Promise<[copy: PreparedItem, first: PreparedItem][]> {
  const sightings: TelegramSighting[] = items.map((it, i) => ({
    ws,
    identifier: it.identifier,
    fingerprint: fingerprints[i]!,
    recordedAt: it.recordedAt,
  }))
  const claimed: boolean[] = []
  const firsts = await findRepeats(check.coord, check.windowMs, sightings, claimed)
  const copies: [PreparedItem, PreparedItem][] = []
  let claimers: Map<string, PreparedItem> | null = null
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!
    if (claimed[i]) it.claim = sightings[i]
    const first = firsts[i]!
    if (first === null) continue
    const at = first >= 0 ? ` at ${new Date(first).toISOString()}` : ''
    it.rejection = {
      status: 'duplicate',
      reason: `repeat of the same telegram (access number and application bytes) reported${at}`,
    }
    if (!claimers) {
      claimers = new Map()
      for (let k = 0; k < items.length; k++)
        if (claimed[k]) claimers.set(repeatKey(sightings[k]!), items[k]!)
    }
    const mate = claimers.get(repeatKey(sightings[i]!))
    if (mate) copies.push([it, mate])
  }
  return copies
}

/** Gives up the claims of `items` that hold one (kept for the pipeline's release if this fails). */
export async function giveUpClaims(coord: Coord | undefined, items: PreparedItem[]): Promise<void> {
  const held = items.filter((it) => it.claim)
  if (!coord || !held.length) return
  try {
    await releaseClaims(
      coord,
      held.map((it) => it.claim!),
    )
    for (const it of held) it.claim = undefined
  } catch {
    // the pipeline tries again when the request ends; else the key lapses with its window
  }
}
