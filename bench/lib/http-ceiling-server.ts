// HTTP ceiling: a bare uWebSockets.js server in its own process that reads every request body
// into one buffer the way src/http/server.ts does, optionally JSON.parses it (argv[2] ===
// 'parse'), and answers a small JSON object with the item count. No auth, no validation,
// no store: what the HTTP layer (plus JSON.parse) can carry on this machine.
import uWS from 'uWebSockets.js'
import { readBody } from './child-server.js'

const parse = process.argv[2] === 'parse'
const app = uWS.App()
app.any('/*', (res) =>
  readBody(res, (body, aborted) => {
    let n = 0
    if (parse) {
      const v = JSON.parse(body.toString('utf8')) as { readings?: unknown[]; uplinks?: unknown[] }
      n = (v.readings ?? v.uplinks ?? []).length
    }
    if (aborted()) return
    res.cork(() => {
      res.writeStatus('201 Created')
      res.writeHeader('content-type', 'application/json')
      res.end(`{"accepted":${n},"duplicates":0,"rejected":0,"results":[]}`)
    })
  }),
)
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) process.exit(1)
  process.stdout.write(`listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
