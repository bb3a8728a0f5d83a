// Streamed answers (exports): status and headers first, then the body chunk by chunk as the
// source yields it, waiting whenever uWS reports backpressure, so a slow client holds back
// the query instead of the service buffering the result. A source that fails after the
// headers went out cannot change the status any more: the connection is closed without the
// final chunk, so the client sees a broken transfer, never a complete-looking file.
import type uWS from 'uWebSockets.js'

export interface StreamTarget {
  res: uWS.HttpResponse
  status: string
  headers: Record<string, string>
  isAborted(): boolean
  head: boolean
}

/** Polls for an aborted client while waiting for the socket to drain (onAborted is taken). */
function drained(res: uWS.HttpResponse, isAborted: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (isAborted()) {
        clearInterval(timer)
        resolve()
      }
    }, 500)
    res.onWritable(() => {
      clearInterval(timer)
      resolve()
      return true
    })
  })
}

/**
 * Writes the stream out; resolves when the answer is complete (or the client went away).
 * The first chunk is awaited before the status goes out, so a query that fails at once
 * (store down, bad SQL) is answered `failed()` (a 5xx) instead of a broken 200.
 */
export async function writeStream(
  t: StreamTarget,
  body: AsyncIterable<Uint8Array>,
  failed: (err: unknown) => { status: string; body: string },
): Promise<{ bytes: number; error?: unknown; failedEarly?: boolean }> {
  const { res } = t
  if (t.head) {
    res.cork(() => {
      res.writeStatus(t.status)
      for (const k in t.headers) res.writeHeader(k, t.headers[k]!)
      res.endWithoutBody()
    })
    return { bytes: 0 }
  }
  const it = body[Symbol.asyncIterator]()
  let bytes = 0
  let started = false
  try {
    for (;;) {
      const next = await it.next()
      if (t.isAborted()) return { bytes }
      if (!started) {
        started = true
        res.cork(() => {
          res.writeStatus(t.status)
          for (const k in t.headers) res.writeHeader(k, t.headers[k]!)
        })
      }
      if (next.done) {
        res.cork(() => res.end())
        return { bytes }
      }
      let ok = true
      res.cork(() => {
        ok = res.write(next.value)
      })
      bytes += next.value.length
      if (!ok) await drained(res, t.isAborted)
      if (t.isAborted()) return { bytes }
    }
  } catch (error) {
    if (!t.isAborted()) {
      if (started) res.close()
      else {
        const f = failed(error)
        res.cork(() => {
          res.writeStatus(f.status)
          res.writeHeader('content-type', 'application/json')
          res.end(f.body)
        })
      }
    }
    return { bytes, error, failedEarly: !started }
  } finally {
    await it.return?.()
  }
}
