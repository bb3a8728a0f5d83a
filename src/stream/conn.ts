// One WebSocket connection's state and the endpoint's counters.
import type uWS from 'uWebSockets.js'

export interface Conn {
  authorization: string
  ip: string
  workspaceId: number
  inFlight: number
  closed: boolean
  socket: uWS.WebSocket<Conn> | null
}

export interface StreamStats {
  connections: number
  inFlight: number
  inFlightBytes: number
  /** Answers sent, by HTTP-like status. */
  answers: Map<number, number>
  /** Messages refused by flow control (window, unread answers, global budget). */
  refused: number
}

export const newStats = (): StreamStats => ({
  connections: 0,
  inFlight: 0,
  inFlightBytes: 0,
  answers: new Map(),
  refused: 0,
})
