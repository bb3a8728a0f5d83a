// Secrets never reach stderr or a log line: a bad variable is named, never echoed, and
// URL credentials (and the configured tokens) are masked in everything the process writes.
import { spawn } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config/index.js'
import { createLogger } from '../../src/observability/logger.js'
import { freePort } from '../helpers/redis.js'

const root = path.resolve(import.meta.dirname, '../..')
const PASSWORD = 'hunter2-very-secret'

/** Runs `src/main.ts` with `env` until it exits; returns the code and what it printed. */
async function run(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      WORKERS: '1',
      SCHEDULER: 'off',
      CLICKHOUSE_URL: '',
      REDIS_URL: '',
      ADMIN_TOKEN: '',
      DATA_DIR: path.join(os.tmpdir(), `mf-secrets-${process.pid}`),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  let stdout = ''
  child.stderr.on('data', (d) => (stderr += d))
  child.stdout.on('data', (d) => (stdout += d))
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)))
  return { code, stderr, stdout }
}

t.test('a bad ADMIN_TOKEN is named, its value never printed', async (t) => {
  const secret = 'short-secret'
  let err: unknown = null
  try {
    loadConfig({ ADMIN_TOKEN: secret })
  } catch (e) {
    err = e
  }
  t.ok(err instanceof ConfigError, 'a ConfigError')
  t.match((err as Error).message, /ADMIN_TOKEN/)
  t.notMatch((err as Error).message, secret, 'the ConfigError does not quote the value')
  const r = await run({ ADMIN_TOKEN: secret })
  t.equal(r.code, 1)
  t.match(r.stderr, /ADMIN_TOKEN/, 'stderr names the variable')
  t.notMatch(r.stderr + r.stdout, secret, 'and never prints the token')
})

t.test('a REDIS_URL with a bad scheme is named, its password never printed', async (t) => {
  const r = await run({ REDIS_URL: `http://user:${PASSWORD}@127.0.0.1:6379` })
  t.equal(r.code, 1)
  t.match(r.stderr, /REDIS_URL/)
  t.notMatch(r.stderr + r.stdout, PASSWORD)
  t.notMatch(r.stderr, 'user:', 'not even the user name')
})

t.test(
  'an unreachable REDIS_URL stops the start, the URL printed without credentials',
  async (t) => {
    const port = await freePort() // nothing listens there
    const r = await run({ REDIS_URL: `redis://user:${PASSWORD}@127.0.0.1:${port}/0` })
    t.equal(r.code, 1)
    t.match(r.stderr, /REDIS_URL/, 'names the variable')
    t.match(r.stderr, `redis://***@127.0.0.1:${port}`, 'the URL with its credentials masked')
    t.notMatch(r.stderr + r.stdout, PASSWORD)
  },
)

t.test('every log line masks URL credentials and the configured secrets', async (t) => {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(chunk.toString())
      cb()
    },
  })
  const adminToken = 'admin-token-0123456789abcdef'
  const log = createLogger(
    loadConfig({
      LOG_LEVEL: 'info',
      ADMIN_TOKEN: adminToken,
      CLICKHOUSE_URL: `http://default:${PASSWORD}@ch:8123/db`,
    }),
    sink,
  )
  log.error({ err: new Error(`connect to redis://u:${PASSWORD}@redis:6379 failed`) }, 'redis down')
  log.warn({ target: `https://x:${PASSWORD}@example.com/hook` }, 'delivery failed')
  log.info(`password ${PASSWORD} quoted by a driver, token ${adminToken} in a message`)
  await new Promise((r) => setImmediate(r))
  t.equal(lines.length, 3, 'three lines written')
  const all = lines.join('')
  t.notMatch(all, PASSWORD, 'no password')
  t.notMatch(all, adminToken, 'no admin token')
  t.match(all, 'redis://***@redis:6379', 'URL kept, credentials masked')
  t.match(all, 'https://***@example.com/hook')
})
