// A real ClickHouse server for tests: `meterflow clickhouse-server` (the chdb package's
// engine serving ClickHouse's own HTTP interface) started as a child process on a free
// port, or the server CLICKHOUSE_URL names. Each caller gets a database of its own.
//
// Cluster mode: with CLICKHOUSE_URL set (CI's second pass) or TEST_CLUSTER=1 (a server per
// test file, started here), every test server the helpers start runs on a ClickHouse
// server and Redis instead of chDB and in-process coordination.
import { spawn, type ChildProcess } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { freePort, redisAvailable, startRedis, type RedisHandle } from './redis.js'

const root = path.resolve(import.meta.dirname, '../..')

export const clusterMode = Boolean(process.env.CLICKHOUSE_URL || process.env.TEST_CLUSTER === '1')

export const CLUSTER_SKIP_NOTICE =
  'cluster mode needs redis-server: cluster tests SKIPPED (install redis-server; .ci/run does)'

export interface ClickHouseHandle {
  /** Server URL without a database path. */
  url: string
  /** Stops the server (SIGKILL: its data directory is thrown away). */
  stop(): Promise<void>
}

/** Starts `meterflow clickhouse-server` on a free port with a fresh data directory. */
export async function startClickHouse(): Promise<ClickHouseHandle> {
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-ch-'))
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/clickhouse-server/cli.ts', '--path', dir, '--port', String(port)],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => {
      if (output.includes('clickhouse listening on')) resolve()
    })
    void exited.then(() => reject(new Error(`clickhouse-server exited: ${output}`)))
  })
  // Never what keeps a test process alive; killed when it exits.
  child.unref()
  for (const s of [child.stdout, child.stderr]) (s as unknown as { unref(): void }).unref()
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  process.once('exit', kill)
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      child.ref() // until it has exited
      kill()
      await exited
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

let shared: Promise<{ clickhouse: string; redis: string }> | undefined

/** The file's ClickHouse server and Redis, started on first use (cluster mode only). */
function clusterServers(): Promise<{ clickhouse: string; redis: string }> {
  shared ??= (async () => {
    let clickhouse = process.env.CLICKHOUSE_URL
    if (!clickhouse) clickhouse = (await startClickHouse()).url
    let redis: RedisHandle | undefined
    if (!process.env.REDIS_URL) {
      if (!redisAvailable()) throw new Error(CLUSTER_SKIP_NOTICE)
      redis = await startRedis()
    }
    return { clickhouse, redis: process.env.REDIS_URL ?? redis!.url }
  })()
  return shared
}

/**
 * Environment for a test server in cluster mode: CLICKHOUSE_URL with a database named
 * after `dataDir` (a restart on the same data directory finds its data again) and
 * REDIS_URL. Coordination keys are namespaced by that database, so servers sharing one
 * Redis stay apart.
 */
export async function clusterEnv(dataDir: string): Promise<Record<string, string>> {
  const { clickhouse, redis } = await clusterServers()
  const u = new URL(clickhouse)
  const hash = crypto.createHash('sha1').update(dataDir).digest('hex').slice(0, 12)
  u.pathname = `/mf_test_${hash}`
  return { CLICKHOUSE_URL: u.toString(), REDIS_URL: redis }
}
