// The Meter response object of api-v1.md, built from the stored meter, its profile, its
// group and its latest status.
import type { MeterGroup } from '../store/groups.js'
import { isOperational, type Meter } from '../store/meter-row.js'
import type { Profile } from '../store/profiles.js'
import type { LatestStatus } from '../store/status.js'

/** The stored meter's public fields plus what api-v1.md's Meter object adds. */
export type MeterView = Pick<
  Meter,
  | 'id'
  | 'meter_identifier'
  | 'name'
  | 'unit'
  | 'display_unit'
  | 'group_id'
  | 'rollover_max'
  | 'expected_interval_minutes'
  | 'pulse_weight'
  | 'pulse_unit'
> & {
  profile: { key: string; version: number; name: string; needs_review: boolean } | null
  group: { id: number; name: string } | null
  lifecycle: { state: string; operational: boolean; changed_at: string | null }
  status: { statuses: string[]; reported_at: string } | null
}

export function meterView(
  m: Meter,
  profile: Profile | null,
  group: MeterGroup | null,
  status: LatestStatus | null,
): MeterView {
  return {
    id: m.id,
    meter_identifier: m.meter_identifier,
    name: m.name,
    unit: m.unit,
    display_unit: m.display_unit,
    group_id: m.group_id,
    rollover_max: m.rollover_max,
    expected_interval_minutes: m.expected_interval_minutes,
    pulse_weight: m.pulse_weight,
    pulse_unit: m.pulse_unit,
    profile: {
      key: m.profile_key,
      version: m.profile_version,
      name: profile?.name ?? m.profile_key,
      needs_review: m.profile_needs_review,
    },
    group: group ? { id: group.id, name: group.name } : null,
    lifecycle: {
      state: m.lifecycle_state,
      operational: isOperational(m.lifecycle_state),
      changed_at: m.lifecycle_changed_at,
    },
    status: status ? { statuses: status.statuses, reported_at: status.reported_at } : null,
  }
}
