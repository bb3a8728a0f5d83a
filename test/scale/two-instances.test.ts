// Two service processes sharing one redis-server. With the embedded store each process has
// its own chDB DATA_DIR (chDB: one process per directory), so readings, meters and
// idempotency are NOT shared here; what this file proves is what holds through Redis alone:
// the per-token rate limit, the hourly provisioning cap, and one scheduler line. To give
// both instances the same workspace and token (as a shared ClickHouse would), the tenant
// is created on instance A, A is stopped, and its DATA_DIR is copied for instance B.
import fs from 'node:fs'
import t from 'tap'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { request, tmpDataDir } from '../helpers/server.js'
import { startProc, type Proc } from './proc.js'

const ADMIN = 'scale-admin-token-0123456789'

if (!redisAvailable()) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped')
} else {
  const redis = await startRedis()
  const dirA = tmpDataDir()
  const dirB = tmpDataDir()
  const procs: Proc[] = []
  t.teardown(async () => {
    for (const p of procs) await p.kill('SIGKILL')
    await redis.stop()
    for (const d of [dirA, dirB]) fs.rmSync(d, { recursive: true, force: true })
  })
  const env = (dir: string, extra: Record<string, string> = {}) => ({
    DATA_DIR: dir,
    ADMIN_TOKEN: ADMIN,
    REDIS_URL: redis.url,
    ...extra,
  })

  // The shared tenant: workspace with a provisioning cap of 5, a token limited to 6/min.
  const seed = await startProc(env(dirA))
  const admin = (url: string, m: string, path: string, body?: unknown) =>
    request(url, m, `/admin/v1${path}`, { token: ADMIN, body })
  const ws = (
    await admin(seed.url, 'POST', '/workspaces', { name: 'shared', provision_cap_per_hour: 5 })
  ).body.data
  const user = (
    await admin(seed.url, 'POST', `/workspaces/${ws.id}/users`, { email: 's@example.com' })
  ).body.data
  const limited = (
    await admin(seed.url, 'POST', `/workspaces/${ws.id}/tokens`, {
      user_id: user.id,
      scopes: ['data:report'],
      rate_limit_per_minute: 6,
    })
  ).body.data.token
  const open = (
    await admin(seed.url, 'POST', `/workspaces/${ws.id}/tokens`, {
      user_id: user.id,
      scopes: ['data:report'],
      rate_limit_per_minute: 100_000,
    })
  ).body.data.token
  const ws2 = (
    await admin(seed.url, 'POST', '/workspaces', { name: 'capped', provision_cap_per_hour: 5 })
  ).body.data
  const user2 = (
    await admin(seed.url, 'POST', `/workspaces/${ws2.id}/users`, { email: 'c@example.com' })
  ).body.data
  const capToken = (
    await admin(seed.url, 'POST', `/workspaces/${ws2.id}/tokens`, {
      user_id: user2.id,
      scopes: ['data:report'],
      rate_limit_per_minute: 100_000,
    })
  ).body.data.token
  await seed.kill('SIGTERM')
  fs.cpSync(dirA, dirB, { recursive: true })

  const interval = { SCHEDULER: 'on', SCHEDULER_INTERVAL_S: '1' }
  const a = await startProc(env(dirA, interval))
  procs.push(a)
  const b = await startProc(env(dirB, interval))
  procs.push(b)
  const at = (min: number) => new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString()

  t.test('one token, two instances: the rate limit counts requests on both', async (t) => {
    // Race both instances at once, more requests than the limit allows.
    const calls = Array.from({ length: 12 }, (_, i) =>
      request(i % 2 ? b.url : a.url, 'POST', '/api/v1/reportData', {
        token: limited,
        body: {
          readings: [{ meter: `rl${i}`, kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(i) }],
        },
      }),
    )
    const statuses = (await Promise.all(calls)).map((r) => r.status)
    t.equal(
      statuses.filter((s) => s === 429).length,
      6,
      `exactly 6 of 12 refused (${statuses.join(' ')})`,
    )
  })

  t.test('the hourly provisioning cap holds across instances racing new meters', async (t) => {
    const calls = Array.from({ length: 10 }, (_, i) =>
      request(i % 2 ? b.url : a.url, 'POST', '/api/v1/reportData', {
        token: capToken,
        body: {
          readings: [
            { meter: `cap${i}`, kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(1) },
          ],
        },
      }),
    )
    const results = (await Promise.all(calls)).flatMap((r) =>
      r.body.results.map((x: any) => x.status),
    )
    t.equal(
      results.filter((s: string) => s === 'created').length,
      5,
      'exactly the cap of 5 new meters across both',
    )
    t.equal(
      results.filter((s: string) => s === 'rejected_provision_limit').length,
      5,
      'the rest rejected_provision_limit',
    )
  })

  t.test('exactly one scheduler line runs; the other takes over after a kill', async (t) => {
    await new Promise((r) => setTimeout(r, 3500))
    const ping = async (url: string) =>
      (await request(url, 'GET', '/api/v1/ping', { token: open })).body.scheduler as {
        ever_ran: boolean
        last_run_at: string | null
      }
    const [pa, pb] = [await ping(a.url), await ping(b.url)]
    t.equal(
      [pa.ever_ran, pb.ever_ran].filter(Boolean).length,
      1,
      'one instance ran the scheduler, the other never did',
    )
    const holder = pa.ever_ran ? a : b
    const other = pa.ever_ran ? b : a
    await holder.kill('SIGKILL')
    let took = false
    for (let i = 0; i < 40 && !took; i++) {
      await new Promise((r) => setTimeout(r, 250))
      took = (await ping(other.url)).ever_ran
    }
    t.ok(took, 'after the holder died its lease expired and the other instance runs the line')
  })
}
