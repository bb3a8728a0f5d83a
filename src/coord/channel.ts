// Limit refusals and coordination failures for observers (node:diagnostics_channel), seen
// where every limit is taken, in either implementation.
import diagnostics_channel from 'node:diagnostics_channel'

export interface TakeEvent {
  /** The coordinator (apps sharing a process are told apart by it). */
  coord: object
  key: string
  by: number
  /** false: refused at the limit; null: coordination failed. */
  ok: boolean | null
}

export const takeChannel = diagnostics_channel.channel('meterflow:coord.take')

export function publishTake(e: TakeEvent): void {
  if (takeChannel.hasSubscribers) takeChannel.publish(e)
}
