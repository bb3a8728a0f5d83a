// Config: the environment table of operator-api.md in one TypeBox schema, parsed once and
// frozen; a bad value stops the process with a message naming the variable.
import { spawn } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config/index.js'

const root = path.resolve(import.meta.dirname, '../..')

t.test('defaults match operator-api.md and our documented limits', async (t) => {
  const c = loadConfig({})
  t.match(c, {
    HOST: '127.0.0.1',
    PORT: 8080,
    SCHEDULER: 'on',
    SCHEDULER_INTERVAL_S: 60,
    EVENT_RETRY_DELAYS_MS: [10_000, 60_000, 300_000, 1_800_000],
    EVENT_TIMEOUT_MS: 5000,
    EVENT_DISABLE_AFTER: 3,
    EVENT_BLOCK_PRIVATE_TARGETS: false,
    MAX_BODY_BYTES: 16 * 1024 * 1024,
    MAX_BATCH_ITEMS: 10_000,
    ENGINE_THREAD_NICE: 10,
    METER_LEASE_KEEP_S: 1200,
    LOG_LEVEL: 'info',
  })
  t.equal(c.DATA_DIR, path.resolve('./data'), 'DATA_DIR ./data, made absolute')
  t.equal(c.WORKERS, Math.max(1, os.availableParallelism()), 'WORKERS defaults to the cores')
  for (const unset of ['CLICKHOUSE_URL', 'REDIS_URL', 'ADMIN_TOKEN', 'SMTP_URL'] as const)
    t.equal(c[unset], undefined, `${unset} unset by default`)
  t.ok(Object.isFrozen(c), 'the config is frozen')
})

t.test('values are parsed from the environment', async (t) => {
  const c = loadConfig({
    HOST: '0.0.0.0',
    PORT: '9000',
    DATA_DIR: '/tmp/x',
    CLICKHOUSE_URL: 'http://u:p@ch:8123/meterflow',
    REDIS_URL: 'redis://r:6379',
    ADMIN_TOKEN: 'a-long-enough-admin-token',
    SCHEDULER: 'off',
    SCHEDULER_INTERVAL_S: '5',
    EVENT_RETRY_DELAYS_MS: '1, 2,3,4',
    EVENT_BLOCK_PRIVATE_TARGETS: '1',
    WORKERS: '3',
    SMTP_URL: 'smtp://mail:25',
    MAX_BODY_BYTES: '1024',
    MAX_BATCH_ITEMS: '10',
    ENGINE_THREAD_NICE: '0',
    METER_LEASE_KEEP_S: '5',
  })
  t.match(c, {
    HOST: '0.0.0.0',
    PORT: 9000,
    DATA_DIR: '/tmp/x',
    SCHEDULER: 'off',
    SCHEDULER_INTERVAL_S: 5,
    EVENT_RETRY_DELAYS_MS: [1, 2, 3, 4],
    EVENT_BLOCK_PRIVATE_TARGETS: true,
    WORKERS: 3,
    MAX_BODY_BYTES: 1024,
    MAX_BATCH_ITEMS: 10,
    ENGINE_THREAD_NICE: 0,
    METER_LEASE_KEEP_S: 5,
  })
  t.equal(loadConfig({ PORT: '' }).PORT, 8080, 'an empty variable counts as unset')
})

t.test('a bad value throws a ConfigError naming the variable', async (t) => {
  const bad: Record<string, string> = {
    PORT: 'abc',
    SCHEDULER: 'sometimes',
    SCHEDULER_INTERVAL_S: '0',
    EVENT_RETRY_DELAYS_MS: '1,2',
    EVENT_TIMEOUT_MS: '-5',
    WORKERS: '1.5',
    REDIS_URL: 'localhost:6379',
    CLICKHOUSE_URL: 'clickhouse:8123',
    ADMIN_TOKEN: 'short',
    MAX_BODY_BYTES: 'lots',
    ENGINE_THREAD_NICE: '20',
    METER_LEASE_KEEP_S: '0',
    LOG_LEVEL: 'loud',
  }
  for (const [name, value] of Object.entries(bad)) {
    let err: unknown = null
    try {
      loadConfig({ [name]: value })
    } catch (e) {
      err = e
    }
    t.ok(err instanceof ConfigError, `${name}=${value} is a ConfigError`)
    t.match(
      (err as Error)?.message,
      new RegExp(`^invalid environment variable ${name}: `),
      `names ${name}`,
    )
  }
  t.throws(() => loadConfig({ PORT: '70000' }), /PORT/, 'PORT out of range')
})

t.test('EVENT_RETRY_DELAYS_MS must grow strictly (the spec: "a growing delay")', async (t) => {
  for (const value of ['1000,1000,1000,1000', '5000,1000,2000,3000', '0,0,0,0', '1,2,3,3']) {
    t.throws(
      () => loadConfig({ EVENT_RETRY_DELAYS_MS: value }),
      {
        name: 'Error',
        message:
          /^invalid environment variable EVENT_RETRY_DELAYS_MS: .*longer than the one before/,
      },
      `${value} refused, naming the variable`,
    )
  }
  t.same(loadConfig({ EVENT_RETRY_DELAYS_MS: '0,1,2,3' }).EVENT_RETRY_DELAYS_MS, [0, 1, 2, 3])
})

t.test('npm start with a bad value exits 1 with a message naming the variable', async (t) => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: 'abc' }, 'PORT'],
    [{ SCHEDULER: 'maybe' }, 'SCHEDULER'],
  ]
  for (const [env, name] of cases) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      env: { ...process.env, DATA_DIR: path.join(os.tmpdir(), 'mf-never-created'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    let stdout = ''
    child.stderr.on('data', (d) => (stderr += d))
    child.stdout.on('data', (d) => (stdout += d))
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)))
    t.equal(code, 1, `${name}: exit code 1`)
    t.match(
      stderr,
      new RegExp(`^meterflow: invalid environment variable ${name}: `),
      `${name}: stderr names it`,
    )
    t.notMatch(stderr, /\n\s+at /, `${name}: a message, not a stack trace`)
    t.notMatch(stdout, /listening on/, `${name}: never listens`)
  }
})
