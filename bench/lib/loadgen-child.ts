// The load generator process: a lean HTTP/1.1 client on raw keep-alive sockets (one request
// in flight per connection, no pipelining) so that it costs far less CPU per request than the
// server it drives. Two modes:
//   closed: `connections` clients send back to back; latency = response - send.
//   open:   requests are due at a fixed rate; latency = response - the time the request was
//           DUE (not when a connection became free), so a stalled server shows up in the
//           percentiles instead of silently slowing the generator (no coordinated omission).
// Latencies go into an HDR histogram in microseconds. Driven over IPC by bench/lib/loadgen.ts.
import net from 'node:net'
import * as hdr from 'hdr-histogram-js'
import { bodyFactory, type BodySpec } from './bodies.js'

export interface LoadConfig {
  host: string
  port: number
  path: string
  headers: Record<string, string>
  mode: 'closed' | 'open'
  connections: number
  /** open mode: requests per second */
  rate?: number
  /** open mode: connection cap (requests queue beyond it, latency still counts from due time) */
  maxConnections?: number
  warmupMs: number
  durationMs: number
  body: BodySpec
  /** lanes for open mode (closed mode: one lane per connection) */
  lanes: number
  laneBase?: number
  /** close a connection after this many requests and reconnect from the next 127.x address */
  rotateAfter?: number
  /**
   * Closed mode: several servers (instances of one deployment) instead of `host`/`port`;
   * connection c talks to `targets[c % targets.length]` for the whole run.
   */
  targets?: { host: string; port: number }[]
}

export interface LoadResult {
  mode: 'closed' | 'open'
  windowS: number
  requests: number
  readingsSent: number
  accepted: number
  duplicates: number
  rejected: number
  statuses: Record<string, number>
  errors: number
  requestsPerS: number
  acceptedPerS: number
  sentReadingsPerS: number
  latencyMs: { p50: number; p90: number; p99: number; p999: number; max: number; mean: number }
  offeredRate?: number
  maxConnectionsUsed: number
  queuedMax: number
  generatorCpuMs: number
}

type Done = (status: number, head: string) => void

class Conn {
  private socket: net.Socket
  private buf: Buffer | null = null
  private need = -1
  private bodyAt = 0
  private cb: Done | null = null
  served = 0
  broken = false

  constructor(host: string, port: number, localAddress?: string) {
    this.socket = net.connect({ host, port, localAddress, noDelay: true })
    this.socket.on('data', (d: Buffer) => this.onData(d))
    this.socket.on('error', () => this.fail())
    this.socket.on('close', () => this.fail())
  }

  send(head: string, body: string, cb: Done): void {
    this.cb = cb
    this.socket.write(head + body)
  }

  close(): void {
    this.socket.removeAllListeners('close')
    this.socket.destroy()
  }

  private fail(): void {
    this.broken = true
    const cb = this.cb
    this.cb = null
    cb?.(0, '')
  }

  private onData(d: Buffer): void {
    this.buf = this.buf ? Buffer.concat([this.buf, d]) : d
    for (;;) {
      const buf: Buffer | null = this.buf
      if (!buf) return
      if (this.need < 0) {
        const end = buf.indexOf('\r\n\r\n')
        if (end < 0) return
        const headers = buf.toString('latin1', 0, end)
        const m = /content-length:\s*(\d+)/i.exec(headers)
        this.bodyAt = end + 4
        this.need = this.bodyAt + (m ? Number(m[1]) : 0)
      }
      if (buf.length < this.need) return
      const status = Number(buf.toString('latin1', 9, 12))
      // The answer counts start the body ({"accepted":n,"duplicates":n,...}): no full parse.
      const head = buf.toString('latin1', this.bodyAt, Math.min(this.need, this.bodyAt + 120))
      this.buf = buf.length > this.need ? buf.subarray(this.need) : null
      this.need = -1
      this.served++
      const cb = this.cb
      this.cb = null
      cb?.(status, head)
    }
  }
}

function count(head: string, field: string): number {
  const i = head.indexOf(`"${field}":`)
  if (i < 0) return 0
  return parseInt(head.slice(i + field.length + 3), 10) || 0
}

let addressSeq = 0
function nextLocalAddress(): string {
  const n = 256 + addressSeq++ // 127.0.1.0 upwards; the whole 127/8 is loopback on Linux
  return `127.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255 || 1}`
}

export async function runLoad(cfg: LoadConfig, signal: (m: string) => void): Promise<LoadResult> {
  const { readings, make } = bodyFactory(cfg.body)
  const headBase =
    `POST ${cfg.path} HTTP/1.1\r\nHost: ${cfg.host}:${cfg.port}\r\n` +
    Object.entries(cfg.headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')
  const hist = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  })
  const statuses: Record<string, number> = {}
  let requests = 0
  let accepted = 0
  let duplicates = 0
  let rejected = 0
  let errors = 0
  let maxConns = 0
  let queuedMax = 0
  const laneBase = cfg.laneBase ?? 0
  const laneSeq = new Map<number, number>()
  const nextBody = (lane: number) => {
    const seq = laneSeq.get(lane) ?? 0
    laneSeq.set(lane, seq + 1)
    return make(laneBase + lane, seq)
  }
  const rotate = cfg.rotateAfter !== undefined
  const targets = cfg.targets?.length ? cfg.targets : [{ host: cfg.host, port: cfg.port }]
  if (cfg.mode === 'open' && targets.length > 1) throw new Error('targets: closed mode only')
  const open = (c = 0) => {
    const t = targets[c % targets.length]!
    return new Conn(t.host, t.port, rotate ? nextLocalAddress() : undefined)
  }

  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const tWarm = t0 + cfg.warmupMs
  const tEnd = tWarm + cfg.durationMs
  let measuring = false
  let ended = false
  const warmTimer = setTimeout(() => {
    measuring = true
    signal('measure-start')
  }, cfg.warmupMs)
  let endWindow!: () => void
  const windowEnded = new Promise<void>((r) => (endWindow = r))
  const endTimer = setTimeout(() => {
    ended = true
    signal('measure-end')
    endWindow()
  }, cfg.warmupMs + cfg.durationMs)

  const record = (status: number, head: string, inWindow: boolean, latencyUs: number) => {
    if (!inWindow) return
    requests++
    statuses[status] = (statuses[status] ?? 0) + 1
    if (status === 0) errors++
    accepted += count(head, 'accepted')
    duplicates += count(head, 'duplicates')
    rejected += count(head, 'rejected')
    hist.recordValue(Math.max(1, Math.round(latencyUs)))
  }

  if (cfg.mode === 'closed') {
    const loops: Promise<void>[] = []
    for (let c = 0; c < cfg.connections; c++) {
      loops.push(
        (async () => {
          let conn = open(c)
          while (!ended) {
            const body = nextBody(c)
            const head = headBase + `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`
            const sent = performance.now()
            const [status, text] = await new Promise<[number, string]>((r) =>
              conn.send(head, body, (s, h) => r([s, h])),
            )
            const now = performance.now()
            // Closed loop: a request counts when its answer arrives inside the window.
            record(status, text, measuring && !ended, (now - sent) * 1000)
            if (conn.broken || (rotate && conn.served >= cfg.rotateAfter!)) {
              conn.close()
              if (conn.broken && !ended) await new Promise((r) => setTimeout(r, 50))
              conn = open(c)
            }
          }
          conn.close()
        })(),
      )
    }
    maxConns = cfg.connections
    await windowEnded
    await Promise.all(loops)
  } else {
    const rate = cfg.rate!
    const cap = cfg.maxConnections ?? 512
    const idle: Conn[] = []
    let total = 0
    const queue: { due: number; i: number; inWindow: boolean }[] = []
    let outstanding = 0
    let drained!: () => void
    const allDone = new Promise<void>((r) => (drained = r))
    const fire = (conn: Conn, job: { due: number; i: number; inWindow: boolean }) => {
      outstanding++
      const body = nextBody(job.i % cfg.lanes)
      const head = headBase + `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`
      conn.send(head, body, (status, text) => {
        outstanding--
        // Open loop: latency from the time the request was due.
        record(status, text, job.inWindow, (performance.now() - job.due) * 1000)
        let c = conn
        if (c.broken || (rotate && c.served >= cfg.rotateAfter!)) {
          c.close()
          c = open()
        }
        const nextJob = queue.shift()
        if (nextJob) fire(c, nextJob)
        else idle.push(c)
        if (ended && outstanding === 0 && queue.length === 0) drained()
      })
    }
    for (let c = 0; c < Math.min(cfg.connections, cap); c++) idle.push(open())
    total = idle.length
    const interval = 1000 / rate
    let next = t0
    let i = 0
    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = performance.now()
        while (next <= now && next < tEnd) {
          const job = { due: next, i: i++, inWindow: next >= tWarm }
          const conn = idle.pop() ?? (total < cap ? (total++, open()) : null)
          if (conn) fire(conn, job)
          else {
            queue.push(job)
            if (queue.length > queuedMax) queuedMax = queue.length
          }
          next += interval
        }
        if (total > maxConns) maxConns = total
        if (next >= tEnd) return resolve()
        setTimeout(tick, Math.max(0, Math.min(2, next - performance.now())))
      }
      tick()
    })
    await windowEnded
    if (outstanding > 0 || queue.length > 0) {
      const limit = setTimeout(() => drained(), 60_000)
      await allDone
      clearTimeout(limit)
    }
    for (const c of idle) c.close()
  }
  clearTimeout(warmTimer)
  clearTimeout(endTimer)
  const cpu = process.cpuUsage(cpu0)
  const windowS = cfg.durationMs / 1000
  const q = (p: number) => hist.getValueAtPercentile(p) / 1000
  const result: LoadResult = {
    mode: cfg.mode,
    windowS,
    requests,
    readingsSent: requests * readings,
    accepted,
    duplicates,
    rejected,
    statuses,
    errors,
    requestsPerS: requests / windowS,
    acceptedPerS: accepted / windowS,
    sentReadingsPerS: (requests * readings) / windowS,
    latencyMs: {
      p50: q(50),
      p90: q(90),
      p99: q(99),
      p999: q(99.9),
      max: hist.maxValue / 1000,
      mean: hist.mean / 1000,
    },
    maxConnectionsUsed: maxConns,
    queuedMax,
    generatorCpuMs: (cpu.user + cpu.system) / 1000,
  }
  if (cfg.mode === 'open') result.offeredRate = cfg.rate
  hist.destroy()
  return result
}

// IPC entry: {type:'run', cfg} -> progress messages, then {type:'result', result}.
if (process.send) {
  process.on('message', (m: { type: string; cfg: LoadConfig }) => {
    if (m.type !== 'run') return
    runLoad(m.cfg, (s) => process.send!({ type: s })).then(
      (result) => process.send!({ type: 'result', result }),
      (err) => process.send!({ type: 'error', message: String(err?.stack ?? err) }),
    )
  })
  process.send({ type: 'ready' })
}
