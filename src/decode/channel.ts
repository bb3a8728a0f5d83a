// Decoder outcomes for observers (node:diagnostics_channel): /metrics counts them without
// wrapping the pool.
import diagnostics_channel from 'node:diagnostics_channel'

export interface DecodeEvent {
  /** The pool that decoded (apps sharing a process are told apart by it). */
  pool: object
  kind: 'telegram' | 'frame'
  /** One outcome per item (`ok`, `invalid`, a rejection status), or null when the batch failed. */
  outcomes: string[] | null
  count: number
}

export const decodeChannel = diagnostics_channel.channel('meterflow:decode')
