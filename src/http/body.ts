// The request body: read into one buffer, and parsed as JSON on the handler's demand.
import type uWS from 'uWebSockets.js'
import { validationError } from '../errors.js'

/** Reads the whole body into one buffer (preallocated when Content-Length is known); null
 * when it exceeds `limit` or its declared length. */
export function readBody(
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

/** The body as JSON: a 422 naming `body` when it is empty or not JSON. */
export function parseJsonBody<T>(body: Buffer): T {
  if (body.length === 0)
    throw validationError({ body: ['A JSON body is required.'] }, 'A JSON body is required.')
  try {
    return JSON.parse(body.toString('utf8')) as T
  } catch (e) {
    throw validationError(
      { body: [`Body is not valid JSON: ${(e as Error).message}`] },
      'Body is not valid JSON.',
    )
  }
}
