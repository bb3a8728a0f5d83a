// The event catalog of api-v1.md. There is no event per reading.
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
