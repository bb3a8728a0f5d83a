// A real redis-server for a test file, started on a free port and stopped at teardown.
// Where no redis-server binary exists, Redis tests are skipped with a visible notice
// (`.ci/run` installs it, so CI always runs them). REDIS_URL, when set, is used instead.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

/**
 * `own`: the test kills or empties its Redis (faults, lost keys), which a shared REDIS_URL
 * cannot offer; it then needs the redis-server binary even when REDIS_URL is set.
 */
export interface RedisOptions {
  own?: boolean
}

export function redisAvailable(opts: RedisOptions = {}): boolean {
  if (process.env.REDIS_URL && !opts.own) return true
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0
}

export const REDIS_SKIP_NOTICE =
  'redis-server not found: Redis tests SKIPPED (install redis-server or set REDIS_URL; .ci/run does)'

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo
      srv.close(() => resolve(port))
    })
    srv.on('error', reject)
  })
}

export interface RedisHandle {
  url: string
  port: number
  stop(): Promise<void>
  /** Kill and restart on the same port with no data (Redis lost its keys). */
  restartEmpty(): Promise<void>
  /** Stop without restarting (Redis unreachable). */
  kill(): Promise<void>
  start(): Promise<void>
}

let dbCounter = 0

export async function startRedis(opts: RedisOptions = {}): Promise<RedisHandle> {
  if (process.env.REDIS_URL && !opts.own) {
    // A shared server: give each test file its own logical database.
    const u = new URL(process.env.REDIS_URL)
    const db = 1 + ((process.pid + dbCounter++) % 15)
    u.pathname = `/${db}`
    const noop = async () => {}
    return {
      url: u.toString(),
      port: Number(u.port || 6379),
      stop: noop,
      restartEmpty: noop,
      kill: noop,
      start: noop,
    }
  }
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-redis-'))
  let proc: ChildProcess | null = null
  const start = async () => {
    proc = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    )
    // Never what keeps a test process alive; killed when it exits.
    proc.unref()
    for (let i = 0; i < 100; i++) {
      if (await canConnect(port)) return
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error('redis-server did not start')
  }
  const kill = async () => {
    const p = proc
    proc = null
    if (!p || p.exitCode !== null) return
    await new Promise<void>((r) => {
      p.once('exit', () => r())
      p.ref() // until it has exited
      p.kill('SIGKILL')
    })
  }
  process.once('exit', () => proc?.kill('SIGKILL'))
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    kill,
    async restartEmpty() {
      await kill()
      await start()
    },
    async stop() {
      await kill()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}
