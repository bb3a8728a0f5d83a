// Sending answers: counted, logged like an HTTP request, and dropped when the connection
// is already gone (the message was processed; the client resends with the same id).
import type { Logger } from 'pino'
import { ApiError, apiError } from '../errors.js'
import type { Conn, StreamStats } from './conn.js'
import type { StreamAnswer } from './protocol.js'

export const STREAM_PATH = '/api/v1/stream'

export interface Answers {
  send(c: Conn, a: StreamAnswer, started: number): void
  /** The answer for a failure: its own status for an ApiError, a logged 500 otherwise. */
  fromError(id: StreamAnswer['id'], err: unknown): StreamAnswer
}

export function answers(log: Logger, stats: StreamStats): Answers {
  return {
    send(c, a, started) {
      stats.answers.set(a.status, (stats.answers.get(a.status) ?? 0) + 1)
      log.info(
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
    },
    fromError(id, err) {
      if (err instanceof ApiError) return { id, status: err.status, body: err.body() }
      log.error({ err, path: STREAM_PATH }, 'unhandled error')
      const e = apiError('Internal')
      return { id, status: e.status, body: e.body() }
    },
  }
}

/** The id of a message we will not process, for its refusal (null when unreadable). */
export function peekId(text: string): StreamAnswer['id'] {
  const m = /^\s*\{\s*"id"\s*:\s*("(?:[^"\\]|\\.){1,128}"|-?\d{1,15})/.exec(text)
  if (!m) return null
  try {
    return JSON.parse(m[1]!) as string | number
  } catch {
    return null
  }
}
