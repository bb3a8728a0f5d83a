// Writing one request's answer: corked, once (a second answer or one to an aborted request
// is dropped), logged with its status and time. Streamed answers (exports) are written as
// produced and logged when they end.
import type uWS from 'uWebSockets.js'
import type { Logger } from 'pino'
import { ApiError, apiError } from '../errors.js'
import { statusLine } from './status.js'
import { writeStream } from './stream-body.js'
import type { HttpRequest, HttpResponse } from './types.js'

export interface Responder {
  respond(out: HttpResponse, request?: HttpRequest, closeConnection?: boolean): void
  /** An ApiError as its own status; anything else logged and answered 500. */
  fail(err: unknown, request?: HttpRequest, closeConnection?: boolean): void
  /** 503 with Retry-After, closing the connection (shutting down). */
  unavailable(message: string): void
}

export function responder(
  res: uWS.HttpResponse,
  method: string,
  path: string,
  log: Logger,
): Responder {
  const started = performance.now()
  let aborted = false
  let answered = false
  res.onAborted(() => {
    aborted = true
  })
  const logged = (status: number, request: HttpRequest | undefined, extra = {}) =>
    log.info(
      {
        method,
        path,
        status,
        ...extra,
        ms: Math.round((performance.now() - started) * 10) / 10,
        workspace: request?.workspaceId,
      },
      'request',
    )

  const respond: Responder['respond'] = (out, request, closeConnection = false) => {
    if (aborted || answered) return
    answered = true
    const merged = { ...request?.responseHeaders, ...out.headers }
    if (out.stream) {
      // Exports: written as produced; the request counts as in flight until the end.
      void writeStream(
        {
          res,
          status: statusLine(out.status),
          headers: merged,
          isAborted: () => aborted,
          head: method === 'HEAD',
        },
        out.stream,
        () => {
          const e = apiError('Internal')
          return { status: statusLine(e.status), body: JSON.stringify(e.body()) }
        },
      ).then(({ bytes, error, failedEarly }) => {
        if (error) log.error({ err: error, method, path }, 'streamed answer failed')
        logged(failedEarly ? 500 : out.status, request, { bytes })
      })
      return
    }
    let payload: string | Buffer
    if (out.body === undefined) payload = ''
    else if (typeof out.body === 'string' || Buffer.isBuffer(out.body)) payload = out.body
    else {
      payload = JSON.stringify(out.body)
      merged['content-type'] ??= 'application/json'
    }
    res.cork(() => {
      res.writeStatus(statusLine(out.status))
      for (const k in merged) res.writeHeader(k, merged[k]!)
      if (method === 'HEAD') res.endWithoutBody(Buffer.byteLength(payload))
      else res.end(payload, closeConnection)
    })
    logged(out.status, request)
  }

  return {
    respond,
    fail(err, request, closeConnection = false) {
      if (err instanceof ApiError)
        return respond({ status: err.status, body: err.body() }, request, closeConnection)
      log.error({ err, method, path }, 'unhandled error')
      const e = apiError('Internal')
      respond({ status: e.status, body: e.body() }, request)
    },
    unavailable(message) {
      const e = apiError('Unavailable', message)
      respond(
        { status: e.status, body: e.body(), headers: { 'retry-after': '5' } },
        undefined,
        true,
      )
    },
  }
}
