// Starts Meterflow in this test process on 127.0.0.1 with its own DATA_DIR, and gives a
// small HTTP client (node:http without keep-alive, so closing the app ends the process).
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { startApp, type App, type AppOptions } from '../../src/app.js'
import type { Clock } from '../../src/clock.js'
import { loadConfig } from '../../src/config/index.js'
import type { Ingest } from '../../src/ingest/types.js'
import { clusterEnv, clusterMode } from './clickhouse.js'

export interface TestServer {
  app: App
  url: string
  dataDir: string
  adminToken: string
  /** Calls the API; `token` is sent as Bearer. Returns status, headers and parsed JSON. */
  call(method: string, path: string, opts?: CallOptions): Promise<CallResult>
  /** Calls the admin API with the admin token; throws unless 2xx. */
  admin(method: string, path: string, body?: unknown): Promise<any>
  /** Workspace + owner with groups.manage + a token with every scope. */
  tenant(opts?: { workspace?: Record<string, unknown>; rateLimit?: number }): Promise<Tenant>
  close(): Promise<void>
}

export interface Tenant {
  workspaceId: number
  userId: number
  token: string
}

export interface CallOptions {
  token?: string
  body?: unknown
  headers?: Record<string, string>
  raw?: string | Buffer
}

export interface CallResult {
  status: number
  headers: http.IncomingHttpHeaders
  body: any
  text: string
}

/** Data directories made here, removed when the test process exits. */
const madeDirs = new Set<string>()

/**
 * A fresh data directory of this test process. It outlives a server closed on it (restart
 * tests open it again) and goes when the process exits, so test runs leave nothing in the
 * temporary directory.
 */
export function tmpDataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-test-'))
  if (madeDirs.size === 0)
    process.once('exit', () => {
      for (const d of madeDirs) fs.rmSync(d, { recursive: true, force: true })
    })
  madeDirs.add(dir)
  return dir
}

export async function startTestServer(
  env: Record<string, string> = {},
  opts: { clock?: Clock; dataDir?: string; wrapIngest?: AppOptions['wrapIngest'] } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tmpDataDir()
  // A test that sets CLICKHOUSE_URL itself (even to '') chose its store.
  const cluster = clusterMode && !('CLICKHOUSE_URL' in env) ? await clusterEnv(dataDir) : {}
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    SCHEDULER: 'off',
    WORKERS: '1',
    LOG_LEVEL: 'silent',
    ...cluster,
    ...env,
  })
  const app = await startApp(config, {
    clock: opts.clock,
    logger: pino({ level: 'silent' }),
    wrapIngest: opts.wrapIngest,
  })
  const adminToken = app.parts.adminToken
  const call = (method: string, p: string, o: CallOptions = {}) => request(app.url, method, p, o)
  const admin = async (method: string, p: string, body?: unknown) => {
    const r = await call(method, `/admin/v1${p}`, { token: adminToken, body })
    if (r.status >= 300) throw new Error(`admin ${method} ${p} → ${r.status} ${r.text}`)
    return r.body
  }
  return {
    app,
    url: app.url,
    dataDir,
    adminToken,
    call,
    admin,
    async tenant(o = {}) {
      const ws = await admin('POST', '/workspaces', { name: 'test', ...o.workspace })
      const user = await admin('POST', `/workspaces/${ws.data.id}/users`, {
        email: 'owner@example.com',
        owner: true,
        permissions: ['groups.manage'],
      })
      const tok = await admin('POST', `/workspaces/${ws.data.id}/tokens`, {
        user_id: user.data.id,
        scopes: ['data:report', 'data:read', 'masterdata:write'],
        rate_limit_per_minute: o.rateLimit ?? 100_000,
      })
      return { workspaceId: ws.data.id, userId: user.data.id, token: tok.data.token }
    },
    close: () => app.close(),
  }
}

export function request(
  base: string,
  method: string,
  p: string,
  o: CallOptions = {},
): Promise<CallResult> {
  const payload =
    o.raw !== undefined ? o.raw : o.body === undefined ? undefined : JSON.stringify(o.body)
  const headers: Record<string, string> = { ...o.headers }
  if (o.token) headers.authorization = `Bearer ${o.token}`
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json'
    headers['content-length'] = String(Buffer.byteLength(payload))
  }
  return new Promise((resolve, reject) => {
    const req = http.request(base + p, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let body: any = undefined
        try {
          body = text ? JSON.parse(text) : undefined
        } catch {
          body = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text })
      })
    })
    req.on('error', reject)
    if (payload !== undefined) req.write(payload)
    req.end()
  })
}

/**
 * An ingest a test swaps at run time (fault injection at the pipeline's door; the store
 * stays real): pass `wrap` as startTestServer's wrapIngest, then `use` a replacement or null.
 */
export function swappableIngest() {
  let real: Ingest | null = null
  let current: Ingest | null = null
  return {
    wrap(pipeline: Ingest): Ingest {
      real = pipeline
      return { ingest: (req) => (current ?? pipeline).ingest(req) }
    },
    /** The app's own pipeline. */
    get real(): Ingest {
      if (!real) throw new Error('swappableIngest: the app is not started')
      return real
    },
    use(replacement: Ingest | null): void {
      current = replacement
    },
  }
}
