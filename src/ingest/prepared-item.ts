// What step 1 (prepare.ts) hands on. Admission and the pipeline read it, the per-profile
// readers and the repeat marks fill it in: it lives below all of them, not in prepare.ts,
// so that none of them has to import the module that imports them.
import type { Meter } from '../store/meter-row.js'
import type { RawPayload } from '../store/reading-row.js'
import type { Profile } from '../store/profiles.js'
import type { ItemStatus, Kind } from './types.js'
import type { TelegramSighting } from './telegram-repeats.js'
import type { Unit } from '../domain/units.js'

export interface PreparedReading {
  kind: Kind
  value: number
  /** null: the device reports no unit (e.g. heat cost allocator units). */
  unit: Unit | null
}

export interface PreparedItem {
  index: number
  identifier: string
  recordedAt: number
  /** As sent, echoed in the results. */
  recordedAtText: string
  /** Kind shown in the results (the first reading's). */
  kind: Kind
  /** The effective profile after the assignment rules. */
  profile: Profile
  /** The item declared a profile (drives provisioning and upgrades). */
  declared: boolean
  meter: Meter | null
  readings: PreparedReading[]
  /** Pulses and pulse deltas are converted once the meter's pulse weight is known. */
  pulse?: { pulses?: number; pulse_delta?: number }
  /** Raw device flags, when the item carries a status (object form, telegrams). */
  rawFlags: string[] | null
  /** Canonical statuses decided by a decoder (telegrams); otherwise mapped by the profile. */
  statuses: string[] | null
  /** A per-item outcome decided before admission (telegram outcomes). */
  rejection?: { status: ItemStatus; reason?: string }
  /** What the device sent, kept on the stored reading (store/reading-row.ts `RawPayload`). */
  rawPayload: RawPayload
  /** Telegram awaiting decoding; `fingerprint` when it needs no key (inspectTelegram). */
  telegram?: { hex: string; encrypted: boolean; fingerprint: number | null }
  /** Encoded binary frame of a workspace decoder profile, awaiting decoding. */
  frame?: string
  /** The repeat check's claim this item made as its telegram's first sighting (given up if it is not stored). */
  claim?: TelegramSighting
}
