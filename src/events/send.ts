// One outbound POST on the wire (an event delivery attempt, a transfer): undici over
// kept-alive connections, redirects never followed (a 3xx is an answer like any other), the
// whole exchange bounded by `timeoutMs`. With `blockPrivate` the target address is checked
// where a connection resolves it (targets.ts): guarded requests have a dispatcher of their
// own, so every socket they reuse was checked when it connected. Never throws; the outcome
// says what happened.
//
// undici rather than node:http: a `meter.created` backlog after a first contact is thousands
// of POSTs on the main thread, and node:http's request objects, agent bookkeeping and
// streams cost ~200 µs of client CPU per POST on this machine against ~90 µs for undici's
// dispatch (a scratch run of 20,000 POSTs to a local receiver, 64 in flight).
import { Agent, type Dispatcher } from 'undici'
import { guardedLookup, literalProblem } from './targets.js'

/**
 * Idle sockets close after IDLE_MS, before the usual 5 s keep-alive of a receiver, so a
 * request is not sent on a socket its server is closing.
 */
const IDLE_MS = 4_000

function dispatchers(): { open: Agent; guarded: Agent } {
  const options = { keepAliveTimeout: IDLE_MS, keepAliveMaxTimeout: IDLE_MS }
  return {
    open: new Agent(options),
    guarded: new Agent({ ...options, connect: { lookup: guardedLookup } }),
  }
}

let agents = dispatchers()

/** Closes kept-alive connections (at shutdown, so no socket outlives the process's work). */
export function closeConnections(): void {
  const old = agents
  // A destroyed agent takes no more requests; the next POST (another app in the same
  // process, a test) gets fresh ones.
  agents = dispatchers()
  void old.open.destroy().catch(() => {})
  void old.guarded.destroy().catch(() => {})
}

export interface SendOutcome {
  /** HTTP status of the answer, null when there was none. */
  status: number | null
  /** Null on 2xx; otherwise why the attempt counts as failed. */
  error: string | null
}

/** Origin and path of a target URL; targets repeat, so each is parsed once. */
const targets = new Map<string, { origin: string; path: string }>()
function target(url: string): { origin: string; path: string } {
  let t = targets.get(url)
  if (!t) {
    const u = new URL(url)
    t = { origin: u.origin, path: u.pathname + u.search }
    if (targets.size >= 1_000) targets.clear()
    targets.set(url, t)
  }
  return t
}

function errorText(err: unknown, timeoutMs: number): string {
  const e = err as NodeJS.ErrnoException
  const text =
    e?.name === 'AbortError' || e?.name === 'TimeoutError' || e?.code === 'UND_ERR_HEADERS_TIMEOUT'
      ? `timeout after ${timeoutMs} ms`
      : (e?.code ? `${e.code}: ` : '') + String(e?.message ?? e)
  return text.slice(0, 500)
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
  return new Promise((resolve) => {
    let done = false
    let abort: ((reason: Error) => void) | null = null
    const finish = (o: SendOutcome) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve(o)
    }
    // A plain timer rather than undici's own timeouts: a target that trickles bytes must not
    // stretch one attempt past its bound.
    const timer = setTimeout(() => {
      finish({ status: null, error: `timeout after ${timeoutMs} ms` })
      abort?.(new Error('timeout'))
    }, timeoutMs)
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(controller) {
        if (done) controller.abort(new Error('timeout'))
        else abort = (reason) => controller.abort(reason)
      },
      onResponseStart(_controller, statusCode) {
        const ok = statusCode >= 200 && statusCode < 300
        finish({ status: statusCode, error: ok ? null : `HTTP ${statusCode}` })
      },
      // The answer's body is not needed; read and dropped, the connection is free for the next.
      onResponseData() {},
      onResponseEnd() {},
      onResponseError(_controller, err) {
        finish({ status: null, error: errorText(err, timeoutMs) })
      },
    }
    try {
      const { origin, path } = target(url)
      const dispatcher = opts.blockPrivate ? agents.guarded : agents.open
      dispatcher.dispatch(
        {
          origin,
          path,
          method: 'POST',
          headers,
          body: Buffer.from(body, 'utf8'),
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        handler,
      )
    } catch (err) {
      finish({ status: null, error: errorText(err, timeoutMs) })
    }
  })
}
