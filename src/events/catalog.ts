// The event catalog of api-v1.md. There is no event per reading.
import type { Meter } from '../store/meter-row.js'
export const EVENT_NAMES = [
  'meter.created',
  'meter.status_changed',
  'alert.opened',
  'alert.resolved',
  'reading.rejected',
  'import.completed',
  'integration.transfer_failed',
] as const
export type EventName = (typeof EVENT_NAMES)[number]

/** `data` of meter.created (api-v1.md), the same wherever the meter was created. */
export function meterCreatedData(
  m: Pick<Meter, 'id' | 'meter_identifier' | 'name' | 'unit' | 'group_id'>,
): Record<string, unknown> {
  return {
    meter: {
      id: m.id,
      identifier: m.meter_identifier,
      name: m.name,
      unit: m.unit,
      group_id: m.group_id,
    },
  }
}
