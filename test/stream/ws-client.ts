// A small WebSocket client for tests (Node 20 has no WebSocket without a flag, and we want
// to control reading: `pauseReading()` stops taking bytes off the socket like a slow client).
import crypto from 'node:crypto'
import net from 'node:net'

export interface WsClient {
  /** HTTP status of the handshake (101 when upgraded) and its body when refused. */
  status: number
  body: string
  send(text: string | object): void
  sendRaw(frame: Buffer): void
  /** Next text message (parsed JSON). */
  next(timeoutMs?: number): Promise<any>
  /** Resolves with the close code when the server closes (1006 if the socket just ends). */
  closed: Promise<number>
  pauseReading(): void
  resumeReading(): void
  close(): void
}

export function frame(payload: Buffer, opcode = 0x1): Buffer {
  const mask = crypto.randomBytes(4)
  const len = payload.length
  const head =
    len < 126
      ? Buffer.from([0x80 | opcode, 0x80 | len])
      : len < 65536
        ? Buffer.alloc(4)
        : Buffer.alloc(10)
  if (len >= 126 && len < 65536) {
    head[0] = 0x80 | opcode
    head[1] = 0x80 | 126
    head.writeUInt16BE(len, 2)
  } else if (len >= 65536) {
    head[0] = 0x80 | opcode
    head[1] = 0x80 | 127
    head.writeBigUInt64BE(BigInt(len), 2)
  }
  const body = Buffer.alloc(len)
  for (let i = 0; i < len; i++) body[i] = payload[i]! ^ mask[i & 3]!
  return Buffer.concat([head, mask, body])
}

export function connectWs(url: string, headers: Record<string, string> = {}): Promise<WsClient> {
  const u = new URL(url)
  const key = crypto.randomBytes(16).toString('base64')
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname)
    let buf = Buffer.alloc(0)
    let upgraded = false
    const messages: any[] = []
    const waiters: ((m: any) => void)[] = []
    let closeResolve!: (code: number) => void
    const closed = new Promise<number>((r) => (closeResolve = r))
    let closeCode: number | null = null
    const client: WsClient = {
      status: 0,
      body: '',
      send: (t) => sock.write(frame(Buffer.from(typeof t === 'string' ? t : JSON.stringify(t)))),
      sendRaw: (f) => sock.write(f),
      next(timeoutMs = 10_000) {
        if (messages.length) return Promise.resolve(messages.shift())
        return new Promise((res, rej) => {
          const timer = setTimeout(() => rej(new Error('no message within timeout')), timeoutMs)
          waiters.push((m) => {
            clearTimeout(timer)
            res(m)
          })
        })
      },
      closed,
      pauseReading: () => sock.pause(),
      resumeReading: () => sock.resume(),
      close: () => {
        sock.write(frame(Buffer.from([0x03, 0xe8]), 0x8))
        sock.end()
      },
    }
    const deliver = (m: any) => {
      const w = waiters.shift()
      if (w) w(m)
      else messages.push(m)
    }
    sock.on('connect', () => {
      const extra = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')
      sock.write(
        `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`,
      )
    })
    sock.on('error', (e) => {
      if (!upgraded && client.status === 0) reject(e)
      closeResolve(closeCode ?? 1006)
    })
    sock.on('close', () => {
      closeResolve(closeCode ?? 1006)
      if (!upgraded && client.status !== 0) resolve(client)
    })
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = buf.subarray(0, end).toString()
        client.status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0)
        buf = buf.subarray(end + 4)
        if (client.status !== 101) {
          // Refused: keep reading the body until the server closes or we have it all.
          const len = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? -1)
          const finish = () => {
            client.body = buf.toString()
            sock.destroy()
            resolve(client)
          }
          if (len >= 0 && buf.length >= len) return finish()
          sock.on('data', () => len >= 0 && buf.length >= len && finish())
          return
        }
        upgraded = true
        resolve(client)
      }
      for (;;) {
        if (buf.length < 2) return
        const op = buf[0]! & 0x0f
        let len = buf[1]! & 0x7f
        let off = 2
        if (len === 126) {
          if (buf.length < 4) return
          len = buf.readUInt16BE(2)
          off = 4
        } else if (len === 127) {
          if (buf.length < 10) return
          len = Number(buf.readBigUInt64BE(2))
          off = 10
        }
        if (buf.length < off + len) return
        const payload = buf.subarray(off, off + len)
        buf = buf.subarray(off + len)
        if (op === 0x1) deliver(JSON.parse(payload.toString()))
        else if (op === 0x8) {
          closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005
          closeResolve(closeCode)
          sock.end()
        } else if (op === 0x9) sock.write(frame(Buffer.from(payload), 0xa))
      }
    })
  })
}
