// One streamed message through the ordinary /reportData path: parse, validate, authenticate
// (each message counts against the token's rate limit), ingest.
import { apiError, validationError } from '../errors.js'
import type { Authenticator, Principal } from '../http/auth.js'
import type { HttpRequest } from '../http/types.js'
import type { Ingest } from '../ingest/types.js'
import { fieldErrors } from '../validate.js'
import { STREAM_PATH, type Answers } from './answers.js'
import type { Conn } from './conn.js'
import { StreamMessage, type StreamAnswer } from './protocol.js'

export interface ProcessDeps {
  auth: Authenticator
  ingest: Ingest
  answers: Answers
}

/** A request-like object so the /reportData authenticator runs unchanged. */
export const requestOf = (c: Pick<Conn, 'authorization' | 'ip'>): HttpRequest => ({
  method: 'GET',
  path: STREAM_PATH,
  query: new URLSearchParams(),
  headers: c.authorization ? { authorization: c.authorization } : {},
  params: {},
  body: Buffer.alloc(0),
  ip: c.ip,
  responseHeaders: {},
  json: () => {
    throw apiError('Internal')
  },
})

export async function processMessage(s: ProcessDeps, c: Conn, text: string): Promise<StreamAnswer> {
  let msg: unknown
  try {
    msg = JSON.parse(text)
  } catch (e) {
    throw validationError(
      { body: [`Message is not valid JSON: ${(e as Error).message}`] },
      'Message is not valid JSON.',
    )
  }
  const id =
    typeof msg === 'object' && msg !== null && 'id' in msg
      ? ((msg as { id: unknown }).id as StreamAnswer['id'])
      : null
  try {
    const errors = fieldErrors(StreamMessage, msg)
    if (Object.keys(errors).length) throw validationError(errors)
    const m = msg as StreamMessage
    const p: Principal = await s.auth.authenticate(requestOf(c), { scope: 'data:report' })
    c.workspaceId = p.workspaceId
    const outcome = await s.ingest.ingest({
      workspaceId: p.workspaceId,
      items: m.readings,
      source: 'stream',
      errorPrefix: 'readings',
    })
    return { id: m.id, status: outcome.accepted > 0 ? 201 : 200, body: outcome }
  } catch (err) {
    const a = s.answers.fromError(typeof id === 'string' || typeof id === 'number' ? id : null, err)
    // A token revoked or expired mid-connection ends the connection after its answer.
    if (a.status === 401 && c.socket && !c.closed) {
      const socket = c.socket
      setImmediate(() => !c.closed && socket.end(1008, 'Unauthenticated'))
    }
    return a
  }
}
