// One outbound POST on the wire (an event delivery attempt, a transfer): node:http(s) over
// kept-alive connections, redirects never followed (a 3xx is an answer like any other), the
// whole exchange bounded by `timeoutMs`. With `blockPrivate` the target address is checked
// where a connection resolves it (targets.ts): guarded requests have agents of their own, so
// every socket they reuse was checked when it connected. Never throws; the outcome says what
// happened.
import http from 'node:http'
import https from 'node:https'
import { guardedLookup, literalProblem } from './targets.js'

/**
 * Kept-alive connections per target. A connection per POST cost a TCP handshake on both
 * sides of every event; a backlog of `meter.created` after a first contact is thousands.
 * Idle sockets close after IDLE_MS, before the usual 5 s keep-alive of a receiver, so a
 * request is not sent on a socket its server is closing.
 */
const IDLE_MS = 4_000
const agentOptions = {
  keepAlive: true,
  maxFreeSockets: 16,
  timeout: IDLE_MS,
  scheduling: 'lifo' as const,
}
const agents = {
  http: { open: new http.Agent(agentOptions), guarded: new http.Agent(agentOptions) },
  https: { open: new https.Agent(agentOptions), guarded: new https.Agent(agentOptions) },
}

/** Closes kept-alive connections (at shutdown, so no socket outlives the process's work). */
export function closeConnections(): void {
  for (const a of [agents.http.open, agents.http.guarded, agents.https.open, agents.https.guarded])
    a.destroy()
}

export interface SendOutcome {
  /** HTTP status of the answer, null when there was none. */
  status: number | null
  /** Null on 2xx; otherwise why the attempt counts as failed. */
  error: string | null
}

export function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  opts: { blockPrivate?: boolean } = {},
): Promise<SendOutcome> {
  if (opts.blockPrivate) {
    const refused = literalProblem(url)
    if (refused) return Promise.resolve({ status: null, error: refused.message })
  }
  const bytes = Buffer.from(body, 'utf8')
  return new Promise((resolve) => {
    let done = false
    const finish = (o: SendOutcome) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve(o)
    }
    let req: http.ClientRequest | undefined
    // A plain timer rather than the socket timeout: a target that trickles bytes must not
    // stretch one attempt past its bound.
    const timer = setTimeout(() => {
      finish({ status: null, error: `timeout after ${timeoutMs} ms` })
      req?.destroy()
    }, timeoutMs)
    try {
      const tls = url.startsWith('https:')
      const mod = tls ? https : http
      const pool = tls ? agents.https : agents.http
      req = mod.request(
        url,
        {
          method: 'POST',
          agent: opts.blockPrivate ? pool.guarded : pool.open,
          ...(opts.blockPrivate ? { lookup: guardedLookup } : {}),
          headers: { ...headers, 'content-length': String(bytes.length) },
        },
        (res) => {
          const status = res.statusCode ?? 0
          // The answer's body is not needed; drained, the connection is free for the next.
          res.resume()
          res.on('error', () => {})
          const ok = status >= 200 && status < 300
          finish({ status, error: ok ? null : `HTTP ${status}` })
        },
      )
      req.on('error', (err: NodeJS.ErrnoException) => {
        const e =
          err.name === 'AbortError' || err.name === 'TimeoutError'
            ? `timeout after ${timeoutMs} ms`
            : (err.code ? `${err.code}: ` : '') + err.message
        finish({ status: null, error: e.slice(0, 500) })
      })
      req.end(bytes)
    } catch (err) {
      finish({ status: null, error: String((err as Error).message ?? err).slice(0, 500) })
    }
  })
}
