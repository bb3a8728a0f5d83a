// The uWebSockets.js server for the whole API. One `any('/*')` handler copies the request
// out of uWS, reads the body into one buffer (413 past the limit), routes, and writes the
// answer corked. In-flight requests are counted so SIGTERM can drain them.
import uWS from 'uWebSockets.js'
import type { Logger } from 'pino'
import { ApiError, apiError, validationError } from '../errors.js'
import type { Router } from './router.js'
import { writeStream } from './stream-body.js'
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

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  402: '402 Payment Required',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
}

export function startHttpServer(router: Router, opts: HttpServerOptions): Promise<HttpServer> {
  const app = uWS.App()
  let inFlight = 0
  let drained: (() => void) | null = null
  let draining = false
  /** Answers an in-flight request 503 (the drain deadline passed). */
  const cutOffs = new Set<() => void>()
  const log = opts.logger

  app.any('/*', (res, req) => {
    const started = performance.now()
    const method = req.getMethod().toUpperCase()
    const path = req.getUrl()
    const headers: Record<string, string> = {}
    req.forEach((k, v) => {
      headers[k] = v
    })
    const query = new URLSearchParams(req.getQuery() ?? '')
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString()
    let aborted = false
    let answered = false
    inFlight++
    const done = () => {
      cutOffs.delete(cutOff)
      if (--inFlight === 0 && drained) drained()
    }
    res.onAborted(() => {
      aborted = true
    })

    const respond = (out: HttpResponse, request?: HttpRequest, closeConnection = false) => {
      if (aborted || answered) return
      answered = true
      const merged = { ...request?.responseHeaders, ...out.headers }
      if (out.stream)
        // Exports: written as produced; the request counts as in flight until the end.
        return writeStream(
          {
            res,
            status: STATUS_TEXT[out.status] ?? String(out.status),
            headers: merged,
            isAborted: () => aborted,
            head: method === 'HEAD',
          },
          out.stream,
          () => {
            const e = apiError('Internal')
            return {
              status: STATUS_TEXT[e.status] ?? String(e.status),
              body: JSON.stringify(e.body()),
            }
          },
        ).then(({ bytes, error, failedEarly }) => {
          if (error) log.error({ err: error, method, path }, 'streamed answer failed')
          log.info(
            {
              method,
              path,
              status: failedEarly ? 500 : out.status,
              bytes,
              ms: Math.round((performance.now() - started) * 10) / 10,
              workspace: request?.workspaceId,
            },
            'request',
          )
        })
      let payload: string | Buffer
      if (out.body === undefined) payload = ''
      else if (typeof out.body === 'string' || Buffer.isBuffer(out.body)) payload = out.body
      else {
        payload = JSON.stringify(out.body)
        merged['content-type'] ??= 'application/json'
      }
      res.cork(() => {
        res.writeStatus(STATUS_TEXT[out.status] ?? String(out.status))
        for (const k in merged) res.writeHeader(k, merged[k]!)
        if (method === 'HEAD') res.endWithoutBody(Buffer.byteLength(payload))
        else res.end(payload, closeConnection)
      })
      log.info(
        {
          method,
          path,
          status: out.status,
          ms: Math.round((performance.now() - started) * 10) / 10,
          workspace: request?.workspaceId,
        },
        'request',
      )
    }
    const fail = (err: unknown, request?: HttpRequest, closeConnection = false) => {
      if (err instanceof ApiError)
        return respond({ status: err.status, body: err.body() }, request, closeConnection)
      log.error({ err, method, path }, 'unhandled error')
      const e = apiError('Internal')
      respond({ status: e.status, body: e.body() }, request)
    }

    const unavailable = (message: string) => {
      const e = apiError('Unavailable', message)
      respond(
        { status: e.status, body: e.body(), headers: { 'retry-after': '5' } },
        undefined,
        true,
      )
    }
    const cutOff = () => unavailable('Shutting down: this request was not completed; retry it.')
    cutOffs.add(cutOff)
    if (draining) {
      unavailable('Shutting down; retry on another instance.')
      return done()
    }

    const match = router.match(method, path)
    if (match.kind === 'not_found') {
      fail(apiError('NotFound', `No route for ${method} ${path}.`))
      return done()
    }
    if (match.kind === 'method_not_allowed') {
      const e = apiError('MethodNotAllowed', `${method} is not allowed on ${path}.`)
      respond({ status: e.status, body: e.body(), headers: { allow: match.allowed.join(', ') } })
      return done()
    }

    const limit = match.options.maxBodyBytes ?? opts.maxBodyBytes
    const declared = Number(headers['content-length'] ?? NaN)
    if (declared > limit) {
      // The client is still sending; closing after the answer stops us reading the rest.
      fail(apiError('PayloadTooLarge', `Request body exceeds ${limit} bytes.`), undefined, true)
      return done()
    }

    readBody(res, limit, Number.isFinite(declared) ? declared : -1, (body) => {
      if (body === null) {
        fail(apiError('PayloadTooLarge', `Request body exceeds ${limit} bytes.`), undefined, true)
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
        json<T>(): T {
          if (body.length === 0)
            throw validationError(
              { body: ['A JSON body is required.'] },
              'A JSON body is required.',
            )
          try {
            return JSON.parse(body.toString('utf8')) as T
          } catch (e) {
            throw validationError(
              { body: [`Body is not valid JSON: ${(e as Error).message}`] },
              'Body is not valid JSON.',
            )
          }
        },
      }
      let result: Promise<HttpResponse> | HttpResponse
      try {
        result = match.handler(request)
      } catch (err) {
        fail(err, request)
        return done()
      }
      Promise.resolve(result)
        .then(
          (out) => respond(out, request),
          (err) => fail(err, request),
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
        inFlight: () => inFlight,
        drain(timeoutMs = 30_000) {
          draining = true
          if (listening) {
            uWS.us_listen_socket_close(socket)
            listening = false
          }
          if (inFlight === 0) return Promise.resolve()
          return new Promise<void>((ok) => {
            const timer = setTimeout(() => {
              for (const cut of [...cutOffs]) cut()
              ok()
            }, timeoutMs)
            drained = () => {
              clearTimeout(timer)
              ok()
            }
          })
        },
      })
    })
  })
}

/** Reads the whole body into one buffer: preallocated when Content-Length is known. */
function readBody(
  res: uWS.HttpResponse,
  limit: number,
  declared: number,
  cb: (body: Buffer | null) => void,
): void {
  if (declared === 0) return cb(Buffer.alloc(0))
  let buf = declared > 0 ? Buffer.allocUnsafe(declared) : null
  let chunks: Buffer[] | null = declared > 0 ? null : []
  let length = 0
  let failed = false
  res.onData((chunk, isLast) => {
    if (failed) return
    const n = chunk.byteLength
    if (length + n > limit || (buf && length + n > buf.length)) {
      failed = true
      return cb(null)
    }
    // uWS reuses the chunk's memory after this callback returns, so copy now.
    if (buf) Buffer.from(chunk).copy(buf, length)
    else chunks!.push(Buffer.from(Buffer.from(chunk)))
    length += n
    if (isLast) {
      const body = buf ? buf.subarray(0, length) : Buffer.concat(chunks!, length)
      buf = null
      chunks = null
      cb(body)
    }
  })
}
