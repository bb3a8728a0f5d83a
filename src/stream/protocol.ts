// The WebSocket stream protocol (README "Streaming ingest"): one text message is one
// reportData batch with a client-chosen id, one answer per message with the same id.
//
//   → {"id": "b-17", "readings": [{"meter": "m1", "kind": "saldo", "value": 1, ...}]}
//   ← {"id": "b-17", "status": 201, "body": {"accepted": 1, "duplicates": 0, ...}}
//   ← {"id": "b-18", "status": 422, "body": {"message": "...", "errors": {"readings.0.value": [...]}}}
import { Type, type Static } from '@sinclair/typebox'
import { ReportBody } from '../ingest/schema.js'

export const StreamId = Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Integer()])

/** One message from a gateway: the reportData body plus its id. */
export const StreamMessage = Type.Object({
  id: StreamId,
  readings: ReportBody.properties.readings,
})
export type StreamMessage = Static<typeof StreamMessage>

/** One answer: the HTTP status /reportData would give and its exact body. */
export const StreamAnswer = Type.Object({
  id: Type.Union([StreamId, Type.Null()]),
  status: Type.Integer(),
  body: Type.Unknown(),
})
export type StreamAnswer = Static<typeof StreamAnswer>

export interface StreamLimits {
  /** Messages of one connection being processed at once; the client's window. */
  maxInFlight: number
  /** Largest message; a larger one closes the connection (uWS maxPayloadLength). */
  maxMessageBytes: number
  /** Bytes of answers queued to a slow reader before we stop taking its messages. */
  highWaterBytes: number
  /** Bytes of message payloads in processing across all connections. */
  maxInFlightBytes: number
  /** Seconds without traffic before the connection is closed (pings keep it alive). */
  idleTimeoutS: number
}

export const DEFAULT_LIMITS: StreamLimits = {
  maxInFlight: 4,
  maxMessageBytes: 4 * 1024 * 1024,
  highWaterBytes: 256 * 1024,
  maxInFlightBytes: 256 * 1024 * 1024,
  idleTimeoutS: 120,
}
