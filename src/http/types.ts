import type { Buffer } from 'node:buffer'

/** A request copied out of uWS (whose own request object dies after the first await). */
export interface HttpRequest {
  method: string
  path: string
  query: URLSearchParams
  /** Lower-cased header names. */
  headers: Record<string, string>
  params: Record<string, string>
  body: Buffer
  ip: string
  /** Parses the body as JSON; a body that is not JSON is a 422 naming `body`. */
  json<T = unknown>(): T
  /** Set by the auth step: rate-limit headers and the like, merged into the response. */
  responseHeaders: Record<string, string>
  /** Set by the auth step, for the request log line. */
  workspaceId?: number
}

export interface HttpResponse {
  status: number
  /** Serialised as JSON unless it is a string or Buffer already. */
  body?: unknown
  headers?: Record<string, string>
  /** A body written out chunk by chunk as it is produced (exports); `body` is then unused. */
  stream?: AsyncIterable<Uint8Array>
}

export const json = (
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): HttpResponse => ({
  status,
  body,
  headers,
})
