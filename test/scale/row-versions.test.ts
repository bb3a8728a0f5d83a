// Row versions across instances whose wall clocks disagree: instance A runs 10 minutes
// ahead, B is right. An update made on B after one made on A must win (ReplacingMergeTree
// keeps the highest version), so versions come from a clock shared through Redis, not from
// each instance's own. Two real processes on one ClickHouse server and one redis-server.
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { startClickHouse } from '../helpers/clickhouse.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { request, tmpDataDir } from '../helpers/server.js'
import { startProc, type Proc } from '../helpers/proc.js'

const ADMIN = 'skew-admin-token-0123456789'

if (!redisAvailable()) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis()
  const ch = process.env.CLICKHOUSE_URL ? null : await startClickHouse()
  const database = `mf_skew_${crypto.randomBytes(4).toString('hex')}`
  const chUrl = new URL(process.env.CLICKHOUSE_URL ?? ch!.url)
  chUrl.pathname = `/${database}`
  const dataDir = tmpDataDir()
  const procs: Proc[] = []
  t.teardown(async () => {
    for (const p of procs) await p.kill('SIGKILL')
    await redis.stop()
    await ch?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
  const env = {
    ADMIN_TOKEN: ADMIN,
    DATA_DIR: dataDir,
    CLICKHOUSE_URL: chUrl.toString(),
    REDIS_URL: redis.url,
  }
  const skew = path.join(import.meta.dirname, 'skew-clock.mjs')
  const a = await startProc({
    ...env,
    CLOCK_SKEW_MS: String(10 * 60_000),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${skew}`.trim(),
  })
  procs.push(a)
  const b = await startProc(env)
  procs.push(b)

  const call = async (url: string, method: string, p: string, token: string, body?: unknown) => {
    const r = await request(url, method, p, { token, body })
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`)
    return r.body.data
  }
  const storedName = async (id: number): Promise<string> => {
    const u = new URL(chUrl.origin)
    u.searchParams.set('database', database)
    const res = await fetch(u, {
      method: 'POST',
      body: `SELECT name FROM meters FINAL WHERE id = ${id} FORMAT JSONEachRow`,
    })
    return JSON.parse((await res.text()).trim()).name
  }

  t.test('the later update wins although its instance is 10 minutes behind', async (t) => {
    const ws = await call(a.url, 'POST', '/admin/v1/workspaces', ADMIN, { name: 'skew' })
    const user = await call(a.url, 'POST', `/admin/v1/workspaces/${ws.id}/users`, ADMIN, {
      email: 'o@example.com',
      owner: true,
      permissions: ['groups.manage'],
    })
    const { token } = await call(a.url, 'POST', `/admin/v1/workspaces/${ws.id}/tokens`, ADMIN, {
      user_id: user.id,
      scopes: ['data:report', 'data:read', 'masterdata:write'],
    })
    const m = await call(a.url, 'POST', '/api/v1/meters', token, {
      meter_identifier: 'skewed',
      unit: 'kwh',
      name: 'made on A',
    })
    await call(a.url, 'PATCH', `/api/v1/meters/${m.id}`, token, { name: 'first, on A' })
    await call(b.url, 'PATCH', `/api/v1/meters/${m.id}`, token, { name: 'second, on B' })
    t.equal(await storedName(m.id), 'second, on B', 'the store keeps the later update')
    await call(a.url, 'PATCH', `/api/v1/meters/${m.id}`, token, { name: 'third, on A' })
    t.equal(await storedName(m.id), 'third, on A')
  })
}
