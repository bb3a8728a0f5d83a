// WebSocket streaming ingest at /api/v1/stream. A gateway keeps one connection open and
// sends reportData batches as messages; each is answered with the same status and body
// /reportData would give, tagged with the client's id. Every message runs the ordinary
// pipeline and counts as one request against the token's rate limit.
//
// Flow control. The uWS binding we ship (v20.30) cannot pause a WebSocket's reads, so we
// never buffer: a connection has a window of `maxInFlight` messages being processed;
// a message past the window, or arriving while the client has not read `highWaterBytes`
// of our answers (getBufferedAmount), is answered 429 at once and not processed. A
// producer that waits for answers is therefore slowed to the store's pace, and memory per
// connection stays below maxInFlight × maxMessageBytes + maxBackpressure. A client that
// reads nothing at all is closed by uWS at maxBackpressure (closeOnBackpressureLimit).
import uWS from 'uWebSockets.js'
import { apiError } from '../errors.js'
import type { Authenticator } from '../http/auth.js'
import { statusLine } from '../http/status.js'
import type { Ingest } from '../ingest/types.js'
import type { Part } from '../lifecycle.js'
import type { Base } from '../store/base.js'
import { answers, peekId, STREAM_PATH } from './answers.js'
import { newStats, type Conn, type StreamStats } from './conn.js'
import { refusal } from './flow.js'
import { processMessage, requestOf } from './process.js'
import { DEFAULT_LIMITS, type StreamLimits } from './protocol.js'

export interface StreamEndpoint extends Part {
  stats: StreamStats
  limits: StreamLimits
  /** Adds the WebSocket route to the uWS app (before it listens). */
  configureHttp(app: uWS.TemplatedApp): void
}

export interface StreamDeps extends Pick<Base, 'config' | 'log'> {
  auth: Authenticator
  ingest: Ingest
}

export function buildStream(s: StreamDeps, overrides: Partial<StreamLimits> = {}): StreamEndpoint {
  const limits: StreamLimits = {
    ...DEFAULT_LIMITS,
    maxMessageBytes: Math.min(DEFAULT_LIMITS.maxMessageBytes, s.config.MAX_BODY_BYTES),
    ...overrides,
  }
  const stats = newStats()
  const open = new Set<uWS.WebSocket<Conn>>()
  const reply = answers(s.log, stats)
  const deps = { auth: s.auth, ingest: s.ingest, answers: reply }
  let stopping = false
  let idle: (() => void) | null = null

  const onMessage = (socket: uWS.WebSocket<Conn>, ab: ArrayBuffer) => {
    const started = performance.now()
    const c = socket.getUserData()
    // The ArrayBuffer dies when this callback returns: decode it now.
    const text = Buffer.from(ab).toString('utf8')
    const bytes = ab.byteLength
    const refused = refusal(c, socket.getBufferedAmount(), bytes, stats, limits, stopping)
    if (refused) {
      stats.refused++
      return reply.send(
        c,
        { id: peekId(text), status: refused.status, body: { message: refused.message } },
        started,
      )
    }
    c.inFlight++
    stats.inFlight++
    stats.inFlightBytes += bytes
    processMessage(deps, c, text)
      .catch((err) => reply.fromError(null, err))
      .then((a) => {
        c.inFlight--
        stats.inFlight--
        stats.inFlightBytes -= bytes
        reply.send(c, a, started)
        if (stats.inFlight === 0 && idle) idle()
      })
  }

  /** The token is checked (and the upgrade counted) before the connection exists, so a bad
   * token is an ordinary HTTP 401/403/429 with a JSON body. */
  const upgrade: uWS.WebSocketBehavior<Conn>['upgrade'] = (res, req, context) => {
    const conn: Conn = {
      authorization: req.getHeader('authorization'),
      ip: Buffer.from(res.getRemoteAddressAsText()).toString(),
      workspaceId: 0,
      inFlight: 0,
      closed: false,
      socket: null,
    }
    const key = req.getHeader('sec-websocket-key')
    const protocol = req.getHeader('sec-websocket-protocol')
    const extensions = req.getHeader('sec-websocket-extensions')
    let aborted = false
    res.onAborted(() => {
      aborted = true
    })
    const reject = (err: unknown) => {
      if (aborted) return
      const a = reply.fromError(null, err)
      res.cork(() => {
        res.writeStatus(statusLine(a.status))
        res.writeHeader('content-type', 'application/json')
        res.end(JSON.stringify(a.body))
      })
    }
    if (stopping) return reject(apiError('Unavailable', 'The server is shutting down.'))
    s.auth.authenticate(requestOf(conn), { scope: 'data:report' }).then((p) => {
      if (aborted) return
      conn.workspaceId = p.workspaceId
      res.cork(() => res.upgrade(conn, key, protocol, extensions, context))
    }, reject)
  }

  return {
    name: 'stream',
    stats,
    limits,
    configureHttp(app) {
      app.ws<Conn>(STREAM_PATH, {
        maxPayloadLength: limits.maxMessageBytes,
        idleTimeout: limits.idleTimeoutS,
        sendPingsAutomatically: true,
        maxBackpressure: 1024 * 1024,
        closeOnBackpressureLimit: 1,
        compression: uWS.DISABLED,
        upgrade,
        open: (socket) => {
          const c = socket.getUserData()
          c.socket = socket
          open.add(socket)
          stats.connections++
        },
        message: (socket, ab) => onMessage(socket, ab),
        close: (socket) => {
          const c = socket.getUserData()
          c.closed = true
          c.socket = null
          open.delete(socket)
          stats.connections--
        },
      })
    },
    async stop() {
      // Answer what is in flight (it is stored or refused like any request), then say goodbye.
      stopping = true
      if (stats.inFlight > 0)
        await new Promise<void>((resolve) => {
          // Within the 10 s a supervisor grants a stop, after the HTTP drain: a message not
          // answered by then gets no answer (it was never acknowledged; a retry is safe).
          const timer = setTimeout(resolve, STREAM_DRAIN_MS)
          idle = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      for (const socket of [...open]) socket.end(1001, 'Server shutting down')
    },
  }
}

/** How long a stop waits for streamed messages in flight before closing with 1001. */
const STREAM_DRAIN_MS = 2_000
