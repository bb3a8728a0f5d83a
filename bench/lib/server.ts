// Starts Meterflow as its own process for a scenario: fresh DATA_DIR, SCHEDULER=off,
// LOG_LEVEL=warn, PORT=0 (the `listening on http://HOST:PORT` line gives the port). Runs
// dist/main.js when the project is built, otherwise src/main.ts through tsx. With
// `profile` the process writes a V8 CPU profile into bench/results/ when it stops.
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { freshDataDir } from './data-dirs.js'
import { cpuMs, peakRssMiB, threadCpuMs, type ThreadCpu } from './proc.js'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const RESULTS_DIR = path.join(ROOT, 'bench/results')

export interface ServerOptions {
  name: string
  redisUrl?: string
  clickhouseUrl?: string
  /** The database on `clickhouseUrl` to use (instances of one deployment share it); else a fresh one. */
  clickhouseDatabase?: string
  profile?: boolean
  env?: Record<string, string>
}

export interface InsertStats {
  inserts: number
  rows: number
  ms: number
  maxRows: number
  sizes: number[]
}

export interface BenchServer {
  url: string
  host: string
  port: number
  pid: number
  dataDir: string
  adminToken: string
  runtime: 'dist' | 'tsx'
  cpuMs(): number
  /** CPU by thread kind (main thread, decoder workers, merges, whole process), ms */
  threadCpuMs(): ThreadCpu
  peakRssMiB(): number
  /** Group-commit inserts since the previous call (from bench/lib/probe.mjs). */
  insertStats(): Promise<InsertStats>
  admin(method: string, p: string, body?: unknown): Promise<any>
  call(
    method: string,
    p: string,
    token: string,
    body?: unknown,
  ): Promise<{ status: number; body: any }>
  stop(): Promise<void>
}

/** Extra node flags for every server of the run (env BENCH_SERVER_NODE_FLAGS, space-separated). */
export function serverNodeFlags(): string[] {
  return (process.env.BENCH_SERVER_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean)
}

export async function startServer(o: ServerOptions): Promise<BenchServer> {
  const dataDir = freshDataDir(o.name)
  const dist = path.join(ROOT, 'dist/main.js')
  const runtime = serverRuntime()
  const probeFile = path.join(dataDir, 'bench-probe.json')
  const gcModule =
    runtime === 'dist'
      ? path.join(ROOT, 'dist/store/group-commit.js')
      : path.join(ROOT, 'src/store/group-commit.ts')
  // The same V8 flag as `npm start` (package.json): a larger young generation.
  const args: string[] = ['--max-semi-space-size=64']
  // V8 flags to try on the server (`BENCH_SERVER_NODE_FLAGS="--max-semi-space-size=128"`):
  // given after the default, so they win; named in the run's header.
  args.push(...serverNodeFlags())
  if (runtime === 'tsx') args.push('--import', 'tsx')
  args.push('--import', pathToFileURL(path.join(ROOT, 'bench/lib/probe.mjs')).href)
  if (o.profile) {
    fs.mkdirSync(RESULTS_DIR, { recursive: true })
    args.push('--cpu-prof', '--cpu-prof-dir', RESULTS_DIR)
  }
  args.push(runtime === 'dist' ? dist : path.join(ROOT, 'src/main.ts'))
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    SCHEDULER: 'off',
    LOG_LEVEL: 'warn',
    // the telegram scenarios send the same frames again as newer readings: not gateway repeats
    TELEGRAM_REPEAT_WINDOW_MS: '0',
    BENCH_PROBE_FILE: probeFile,
    BENCH_GROUP_COMMIT_MODULE: pathToFileURL(
      fs.existsSync(gcModule) ? gcModule : path.join(ROOT, 'src/store/group-commit.ts'),
    ).href,
    ...o.env,
  }
  delete env.REDIS_URL
  delete env.CLICKHOUSE_URL
  // The caller's own (instances of one deployment share one), never the bench's environment's.
  if (o.env?.ADMIN_TOKEN) env.ADMIN_TOKEN = o.env.ADMIN_TOKEN
  else delete env.ADMIN_TOKEN
  if (o.redisUrl) env.REDIS_URL = o.redisUrl
  // A database of its own per run, as DATA_DIR is for chDB.
  if (o.clickhouseUrl)
    env.CLICKHOUSE_URL = `${o.clickhouseUrl}/${o.clickhouseDatabase ?? `bench_${o.name.replace(/\W/g, '_')}_${Date.now()}`}`
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let stopping = false
  child.stderr!.on('data', (d: Buffer) => {
    if (process.env.BENCH_SERVER_LOG) process.stderr.write(d)
    stderr += d.toString()
    if (stderr.length > 20_000) stderr = stderr.slice(-10_000)
  })
  const { host, port } = await new Promise<{ host: string; port: number }>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(
      () => reject(new Error(`server did not start in 60 s:\n${stderr}`)),
      60_000,
    )
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on http:\/\/([^:\s]+):(\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve({ host: m[1]!, port: Number(m[2]) })
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code} before listening:\n${stderr}`))
    })
  })
  if (process.env.BENCH_SERVER_LOG) child.stdout!.on('data', (d: Buffer) => process.stderr.write(d))
  child.stdout!.resume()
  child.once('exit', (code, sig) => {
    if (!stopping)
      process.stderr.write(
        `meterflow server (${o.name}) exited unexpectedly: ${code ?? sig}\n${stderr.slice(-4000)}\n`,
      )
  })
  const url = `http://${host}:${port}`
  const adminToken =
    o.env?.ADMIN_TOKEN ?? fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()
  const call = async (method: string, p: string, token: string, body?: unknown) => {
    const r = await fetch(url + p, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await r.text()
    let parsed: any
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      parsed = text
    }
    return { status: r.status, body: parsed }
  }
  return {
    url,
    host,
    port,
    pid: child.pid!,
    dataDir,
    adminToken,
    runtime,
    cpuMs: () => cpuMs(child.pid!),
    threadCpuMs: () => threadCpuMs(child.pid!),
    peakRssMiB: () => peakRssMiB(child.pid!),
    async insertStats() {
      fs.rmSync(probeFile, { force: true })
      child.kill('SIGUSR2')
      for (let i = 0; i < 100; i++) {
        await new Promise((r) => setTimeout(r, 20))
        try {
          return JSON.parse(fs.readFileSync(probeFile, 'utf8')) as InsertStats
        } catch {
          // not written yet
        }
      }
      return { inserts: 0, rows: 0, ms: 0, maxRows: 0, sizes: [] }
    },
    call,
    async admin(method, p, body) {
      const r = await call(method, `/admin/v1${p}`, adminToken, body)
      if (r.status >= 300)
        throw new Error(`admin ${method} ${p} → ${r.status} ${JSON.stringify(r.body)}`)
      return r.body
    },
    stop: () => {
      stopping = true
      return stopChild(child, dataDir)
    },
  }
}

let runtime: 'dist' | 'tsx' | null = null

/**
 * How every server of this bench process runs, decided once at the first ask: dist/ when it
 * is fresh (and BENCH_RUNTIME is not tsx), else src/ through tsx. Asked per server, an edit of
 * src/ during a run switched the later servers to tsx, and one table mixed both runtimes.
 */
export function serverRuntime(): 'dist' | 'tsx' {
  return (runtime ??= process.env.BENCH_RUNTIME !== 'tsx' && distIsFresh() ? 'dist' : 'tsx')
}

/** dist/main.js exists and no file under src/ is newer than it (a stale build would measure old code). */
function distIsFresh(): boolean {
  const dist = path.join(ROOT, 'dist/main.js')
  if (!fs.existsSync(dist)) return false
  const built = fs.statSync(dist).mtimeMs
  const newer = (dir: string): boolean =>
    fs.readdirSync(dir, { withFileTypes: true }).some((e) => {
      const p = path.join(dir, e.name)
      return e.isDirectory() ? newer(p) : e.name.endsWith('.ts') && fs.statSync(p).mtimeMs > built
    })
  return !newer(path.join(ROOT, 'src'))
}

async function stopChild(child: ChildProcess, dataDir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    const t = setTimeout(() => child.kill('SIGKILL'), 20_000)
    await exited
    clearTimeout(t)
  }
  fs.rmSync(dataDir, { recursive: true, force: true })
}

/** Workspace without provisioning cap, an owner, and a token with every scope and no practical rate limit. */
export async function benchTenant(s: BenchServer): Promise<{ ws: number; token: string }> {
  const ws = await s.admin('POST', '/workspaces', {
    name: 'bench',
    provision_cap_per_hour: 1_000_000_000,
  })
  const user = await s.admin('POST', `/workspaces/${ws.data.id}/users`, {
    email: 'bench@example.com',
    owner: true,
    permissions: ['groups.manage'],
  })
  const tok = await s.admin('POST', `/workspaces/${ws.data.id}/tokens`, {
    user_id: user.data.id,
    scopes: ['data:report', 'data:read', 'masterdata:write'],
    rate_limit_per_minute: 1_000_000_000,
  })
  return { ws: ws.data.id, token: tok.data.token }
}
