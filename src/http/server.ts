// The uWebSockets.js server for the whole API. One `any('/*')` handler copies the request
// out of uWS, reads the body into one buffer (413 past the limit), routes, and writes the
// answer corked. In-flight requests are counted so SIGTERM can drain them.
import uWS from 'uWebSockets.js'
import type { Logger } from 'pino'
import { apiError } from '../errors.js'
import { parseJsonBody, readBody } from './body.js'
import { InFlight } from './in-flight.js'
import { responder } from './respond.js'
import type { Router } from './router.js'
import type { HttpRequest, HttpResponse } from './types.js'

export interface HttpServerOptions {
  host: string
  port: number
  maxBodyBytes: number
  logger: Logger
  /** Lets other stages (the WebSocket stream) attach to the same app before listening. */
  configure?: (app: uWS.TemplatedApp) => void
}

export interface HttpServer {
  port: number
  /**
   * Stops accepting connections (a request arriving on an open one is answered 503), then
   * waits until every in-flight request is answered; those still running after `timeoutMs`
   * are answered 503 (not acknowledged: a retry is safe) and no longer waited for.
   */
  drain(timeoutMs?: number): Promise<void>
  inFlight(): number
}

export function startHttpServer(router: Router, opts: HttpServerOptions): Promise<HttpServer> {
  const app = uWS.App()
  const inFlight = new InFlight()

  app.any('/*', (res, req) => {
    const method = req.getMethod().toUpperCase()
    const path = req.getUrl()
    const headers: Record<string, string> = {}
    req.forEach((k, v) => {
      headers[k] = v
    })
    const query = new URLSearchParams(req.getQuery() ?? '')
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString()
    const declared = Number(headers['content-length'] ?? NaN)
    const answer = responder(res, method, path, opts.logger)
    const done = inFlight.begin(() =>
      answer.unavailable('Shutting down: this request was not completed; retry it.'),
    )
    if (inFlight.isDraining) {
      // The body is read (and dropped) first: closing a connection with unread bytes makes
      // the kernel reset it, and the client would see ECONNRESET instead of this 503.
      const refuse = () => {
        answer.unavailable('Shutting down; retry on another instance.')
        done()
      }
      if (!(declared > 0) || declared > opts.maxBodyBytes) return refuse()
      return readBody(res, opts.maxBodyBytes, declared, refuse)
    }

    const match = router.match(method, path)
    if (match.kind === 'not_found') {
      answer.fail(apiError('NotFound', `No route for ${method} ${path}.`))
      return done()
    }
    if (match.kind === 'method_not_allowed') {
      const e = apiError('MethodNotAllowed', `${method} is not allowed on ${path}.`)
      answer.respond({
        status: e.status,
        body: e.body(),
        headers: { allow: match.allowed.join(', ') },
      })
      return done()
    }

    const limit = match.options.maxBodyBytes ?? opts.maxBodyBytes
    const tooLarge = () =>
      // The client may still be sending; closing after the answer stops us reading the rest.
      answer.fail(
        apiError('PayloadTooLarge', `Request body exceeds ${limit} bytes.`),
        undefined,
        true,
      )
    if (declared > limit) {
      tooLarge()
      return done()
    }

    readBody(res, limit, Number.isFinite(declared) ? declared : -1, (body) => {
      if (body === null) {
        tooLarge()
        return done()
      }
      const request: HttpRequest = {
        method,
        path,
        query,
        headers,
        params: match.params,
        body,
        ip,
        responseHeaders: {},
        json: <T>() => parseJsonBody<T>(body),
      }
      let result: Promise<HttpResponse> | HttpResponse
      try {
        result = match.handler(request)
      } catch (err) {
        answer.fail(err, request)
        return done()
      }
      Promise.resolve(result)
        .then(
          (out) => answer.respond(out, request),
          (err) => answer.fail(err, request),
        )
        .finally(done)
    })
  })

  opts.configure?.(app)

  return new Promise((resolve, reject) => {
    app.listen(opts.host, opts.port, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${opts.host}:${opts.port}`))
      const port = uWS.us_socket_local_port(socket)
      let listening = true
      resolve({
        port,
        inFlight: () => inFlight.size,
        drain(timeoutMs = 30_000) {
          if (listening) {
            uWS.us_listen_socket_close(socket)
            listening = false
          }
          return inFlight.drain(timeoutMs)
        },
      })
    })
  })
}
