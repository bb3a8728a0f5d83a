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
import { ApiError, apiError, validationError } from '../errors.js'
import type { Principal } from '../http/auth.js'
import type { HttpRequest } from '../http/types.js'
import { fieldErrors } from '../validate.js'
import type { Ingest } from '../ingest/types.js'
import type { Authenticator } from '../http/auth.js'
import type { Part } from '../lifecycle.js'
import type { Base } from '../store/base.js'
import { DEFAULT_LIMITS, StreamMessage, type StreamAnswer, type StreamLimits } from './protocol.js'

export const STREAM_PATH = '/api/v1/stream'

interface Conn {
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

const STATUS_TEXT: Record<number, string> = {
  401: '401 Unauthorized',
  403: '403 Forbidden',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
}

export function buildStream(s: StreamDeps, overrides: Partial<StreamLimits> = {}): StreamEndpoint {
  const limits: StreamLimits = {
    ...DEFAULT_LIMITS,
    maxMessageBytes: Math.min(DEFAULT_LIMITS.maxMessageBytes, s.config.MAX_BODY_BYTES),
    ...overrides,
  }
  const stats: StreamStats = {
    connections: 0,
    inFlight: 0,
    inFlightBytes: 0,
    answers: new Map(),
    refused: 0,
  }
  const open = new Set<uWS.WebSocket<Conn>>()
  let stopping = false
  let idle: (() => void) | null = null

  /** A request-like object so the /reportData authenticator runs unchanged. */
  const requestOf = (c: Pick<Conn, 'authorization' | 'ip'>): HttpRequest => ({
    method: 'GET',
    path: STREAM_PATH,
    query: new URLSearchParams(),
    headers: c.authorization ? { authorization: c.authorization } : {},
    params: {},
    body: Buffer.alloc(0),
    ip: c.ip,
    responseHeaders: {},
    json: () => {
      throw apiError('Internal')
    },
  })

  const answer = (c: Conn, a: StreamAnswer, started: number) => {
    stats.answers.set(a.status, (stats.answers.get(a.status) ?? 0) + 1)
    s.log.info(
      {
        method: 'WS',
        path: STREAM_PATH,
        status: a.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        workspace: c.workspaceId,
      },
      'stream message',
    )
    if (c.closed || !c.socket) return
    const socket = c.socket
    socket.cork(() => socket.send(JSON.stringify(a), false))
  }

  const errorAnswer = (id: StreamAnswer['id'], err: unknown): StreamAnswer => {
    if (err instanceof ApiError) return { id, status: err.status, body: err.body() }
    s.log.error({ err, path: STREAM_PATH }, 'unhandled error')
    const e = apiError('Internal')
    return { id, status: e.status, body: e.body() }
  }

  /** The id of a message we will not process, for its refusal (null when unreadable). */
  const peekId = (text: string): StreamAnswer['id'] => {
    const m = /^\s*\{\s*"id"\s*:\s*("(?:[^"\\]|\\.){1,128}"|-?\d{1,15})/.exec(text)
    if (!m) return null
    try {
      return JSON.parse(m[1]!) as string | number
    } catch {
      return null
    }
  }

  async function process(c: Conn, text: string): Promise<StreamAnswer> {
    let msg: unknown
    try {
      msg = JSON.parse(text)
    } catch (e) {
      throw validationError(
        { body: [`Message is not valid JSON: ${(e as Error).message}`] },
        'Message is not valid JSON.',
      )
    }
    const id =
      typeof msg === 'object' && msg !== null && 'id' in msg
        ? ((msg as { id: unknown }).id as StreamAnswer['id'])
        : null
    try {
      const errors = fieldErrors(StreamMessage, msg)
      if (Object.keys(errors).length) throw validationError(errors)
      const m = msg as StreamMessage
      const p: Principal = await s.auth.authenticate(requestOf(c), { scope: 'data:report' })
      c.workspaceId = p.workspaceId
      const outcome = await s.ingest.ingest({
        workspaceId: p.workspaceId,
        items: m.readings,
        source: 'stream',
        errorPrefix: 'readings',
      })
      return { id: m.id, status: outcome.accepted > 0 ? 201 : 200, body: outcome }
    } catch (err) {
      const a = errorAnswer(typeof id === 'string' || typeof id === 'number' ? id : null, err)
      // A token revoked or expired mid-connection ends the connection after its answer.
      if (a.status === 401 && c.socket && !c.closed) {
        const socket = c.socket
        setImmediate(() => !c.closed && socket.end(1008, 'Unauthenticated'))
      }
      return a
    }
  }

  const refuse = (c: Conn, text: string, status: number, message: string, started: number) => {
    stats.refused++
    answer(c, { id: peekId(text), status, body: { message } }, started)
  }

  const onMessage = (socket: uWS.WebSocket<Conn>, ab: ArrayBuffer) => {
    const started = performance.now()
    const c = socket.getUserData()
    // The ArrayBuffer dies when this callback returns: decode it now.
    const text = Buffer.from(ab).toString('utf8')
    const bytes = ab.byteLength
    if (stopping)
      return refuse(c, text, 503, 'The server is shutting down; reconnect and resend.', started)
    if (c.inFlight >= limits.maxInFlight)
      return refuse(
        c,
        text,
        429,
        `More than ${limits.maxInFlight} messages in flight on this connection; wait for answers before sending more.`,
        started,
      )
    if (socket.getBufferedAmount() > limits.highWaterBytes)
      return refuse(
        c,
        text,
        429,
        'Answers are not being read; read them before sending more.',
        started,
      )
    if (stats.inFlightBytes + bytes > limits.maxInFlightBytes)
      return refuse(c, text, 503, 'The server is at its ingest capacity; retry shortly.', started)

    c.inFlight++
    stats.inFlight++
    stats.inFlightBytes += bytes
    process(c, text)
      .catch((err) => errorAnswer(null, err))
      .then((a) => {
        c.inFlight--
        stats.inFlight--
        stats.inFlightBytes -= bytes
        answer(c, a, started)
        if (stats.inFlight === 0 && idle) idle()
      })
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
        upgrade: (res, req, context) => {
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
            const a = errorAnswer(null, err)
            res.cork(() => {
              res.writeStatus(STATUS_TEXT[a.status] ?? String(a.status))
              res.writeHeader('content-type', 'application/json')
              res.end(JSON.stringify(a.body))
            })
          }
          if (stopping) return reject(apiError('Unavailable', 'The server is shutting down.'))
          // The token is checked (and the upgrade counted) before the connection exists, so
          // a bad token is an ordinary HTTP 401/403/429 with a JSON body.
          s.auth.authenticate(requestOf(conn), { scope: 'data:report' }).then((p) => {
            if (aborted) return
            conn.workspaceId = p.workspaceId
            res.cork(() => res.upgrade(conn, key, protocol, extensions, context))
          }, reject)
        },
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
