// `meterflow clickhouse-server`: a real ClickHouse HTTP server (ClickHouse 26 from the
// chdb package, no other install) with persistent tables in `path`. For tests, for cluster
// mode on one machine, and for data teams who want Grafana or any HTTP ClickHouse client
// on their data. Known limits: only the `default` user with an empty password, no
// config.xml, one process per path.
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { makeFifo, startEngineThread, type EngineThread } from './engine.js'
import { listenUntilFifoWritten } from '../store/listener.js'

export interface ServerOptions {
  /** Data directory (created if missing). */
  path: string
  port: number
  host?: string
  /** How long to wait for `/ping` to answer before giving up. */
  startTimeoutMs?: number
}

export interface RunningServer {
  url: string
  /** Ends the blocking query, waits for the engine thread to finish. */
  stop(): Promise<void>
  /** Resolves when the engine has stopped, for whatever reason. */
  readonly stopped: Promise<void>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function startClickHouseServer(o: ServerOptions): Promise<RunningServer> {
  const host = o.host ?? '127.0.0.1'
  // Another server on the port would answer our readiness check: refuse up front.
  await assertPortFree(host, o.port)
  const dataDir = path.resolve(o.path)
  fs.mkdirSync(dataDir, { recursive: true })
  // The FIFO sits outside the data directory so a crash leaves nothing in it.
  const fifo = path.join(os.tmpdir(), `meterflow-ch-${process.pid}-${o.port}.ctl`)
  fs.rmSync(fifo, { force: true })
  makeFifo(fifo)
  const query = listenUntilFifoWritten(fifo)
  const engine = startEngineThread([
    `--http_port=${o.port}`,
    `--listen_host=${host}`,
    `--path=${dataDir}`,
    '--multiquery',
    `--query=${query}`,
  ])
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${o.port}`
  const stopped = waitFinished(engine).finally(() => fs.rmSync(fifo, { force: true }))
  await waitReady(url, engine, o.startTimeoutMs ?? 60_000)
  let stopping: Promise<void> | undefined
  return {
    url,
    stopped,
    stop() {
      stopping ??= (async () => {
        // ClickHouse may open the FIFO more than once before it reads (a probe, then the
        // read), so one write can meet no reader: knock until the engine has finished.
        while (!engine.finished()) {
          knock(fifo)
          await sleep(50)
        }
        await stopped
      })()
      return stopping
    },
  }
}

function assertPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`cannot listen on ${host}:${port}: ${err.code ?? err.message}`)),
    )
    probe.listen(port, host, () => probe.close(() => resolve()))
  })
}

/** Writes to the FIFO without blocking; no reader at this moment is not an error. */
function knock(fifo: string): void {
  let fd: number | undefined
  try {
    fd = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)
    fs.writeSync(fd, 'stop\n')
  } catch {
    // ENXIO (no reader yet) or EPIPE (the reader just closed): knock again
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

async function waitFinished(engine: EngineThread): Promise<void> {
  while (!engine.finished()) await sleep(50)
}

async function waitReady(url: string, engine: EngineThread, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (engine.finished())
      throw new Error(`ClickHouse server at ${url} did not start (see its error above)`)
    try {
      const r = await fetch(`${url}/ping`)
      if (r.ok) return
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`ClickHouse server at ${url}: no answer to /ping`)
    await sleep(50)
  }
}
