// A real local HTTP receiver for event deliveries: records every request with its exact
// body bytes and answers with whatever the test's handler says ('hang' = never answer).
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  headers: http.IncomingHttpHeaders
  body: Buffer
}

export type Answer = number | 'hang'

export interface Receiver {
  url: string
  received: Received[]
  /** Sets how the next requests are answered. */
  answer(a: Answer | ((r: Received, n: number) => Answer)): void
  /** Waits until at least `n` requests arrived; throws after `ms`. */
  waitFor(n: number, ms?: number): Promise<Received[]>
  close(): Promise<void>
}

export async function startReceiver(initial: Answer = 200): Promise<Receiver> {
  const received: Received[] = []
  let handler: (r: Received, n: number) => Answer = () => initial
  const waiters: (() => void)[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks) }
      received.push(r)
      for (const w of waiters.splice(0)) w()
      const a = handler(r, received.length)
      if (a === 'hang') return
      res.writeHead(a, { 'content-type': 'text/plain' })
      res.end(String(a))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    answer(a) {
      handler = typeof a === 'function' ? a : () => a
    },
    async waitFor(n, ms = 5000) {
      const until = Date.now() + ms
      while (received.length < n) {
        const left = until - Date.now()
        if (left <= 0)
          throw new Error(`receiver got ${received.length} of ${n} requests in ${ms} ms`)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left)
          waiters.push(() => {
            clearTimeout(t)
            resolve()
          })
        })
      }
      return received
    },
    close() {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
