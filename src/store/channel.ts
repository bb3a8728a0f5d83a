// Group-commit INSERTs for observers (node:diagnostics_channel): /metrics records their size
// and duration without hooking the writer.
import diagnostics_channel from 'node:diagnostics_channel'

export interface InsertEvent {
  /** The writer (apps sharing a process are told apart by it). */
  writer: object
  table: string
  rows: number
  ms: number
}

export const insertChannel = diagnostics_channel.channel('meterflow:group-commit.insert')
