// One outbound POST on the wire (an event delivery attempt, a transfer): node:http(s)
// without connection reuse, redirects never followed (a 3xx is an answer like any other),
// the whole exchange bounded by `timeoutMs`. With `blockPrivate` the target address is
// checked where the connection resolves it (targets.ts). Never throws; the outcome says
// what happened.
import http from 'node:http'
import https from 'node:https'
import { guardedLookup, literalProblem } from './targets.js'

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
      const mod = url.startsWith('https:') ? https : http
      req = mod.request(
        url,
        {
          method: 'POST',
          agent: false,
          ...(opts.blockPrivate ? { lookup: guardedLookup } : {}),
          headers: { ...headers, 'content-length': String(bytes.length), connection: 'close' },
          signal: AbortSignal.timeout(timeoutMs),
        },
        (res) => {
          const status = res.statusCode ?? 0
          // The answer's body is not needed; drain it so the socket closes cleanly.
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
