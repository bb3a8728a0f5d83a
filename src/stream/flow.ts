// Flow control: whether a message may be processed now. We never buffer (the uWS binding we
// ship cannot pause a WebSocket's reads), so a message past a limit is refused at once.
import type { Conn, StreamStats } from './conn.js'
import type { StreamLimits } from './protocol.js'

export interface Refusal {
  status: number
  message: string
}

export function refusal(
  c: Conn,
  bufferedBytes: number,
  bytes: number,
  stats: StreamStats,
  limits: StreamLimits,
  stopping: boolean,
): Refusal | null {
  if (stopping)
    return { status: 503, message: 'The server is shutting down; reconnect and resend.' }
  // The connection's window.
  if (c.inFlight >= limits.maxInFlight)
    return {
      status: 429,
      message: `More than ${limits.maxInFlight} messages in flight on this connection; wait for answers before sending more.`,
    }
  // A client that does not read our answers is slowed before uWS closes it.
  if (bufferedBytes > limits.highWaterBytes)
    return { status: 429, message: 'Answers are not being read; read them before sending more.' }
  // The whole endpoint's budget of message bytes being processed.
  if (stats.inFlightBytes + bytes > limits.maxInFlightBytes)
    return { status: 503, message: 'The server is at its ingest capacity; retry shortly.' }
  return null
}
