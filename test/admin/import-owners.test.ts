// Imports across instances: at start only imports whose owner instance is dead (nobody
// holds their lease) are marked failed; one still running on another live instance is left
// alone. Two instances on one real redis-server: the app (restarted on its own store) and
// a second instance's Redis connection holding its import's lease.
import t from 'tap'
import { RedisCoord } from '../../src/coord/redis.js'
import { IMPORT_LEASE_MS, type ImportRecord } from '../../src/jobs/imports.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

if (!redisAvailable()) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis()
  let s: TestServer = await startTestServer({ REDIS_URL: redis.url })
  const dataDir = s.dataDir
  const prefix = (s.app.parts.coord as RedisCoord).prefix
  const other = new RedisCoord(redis.url, prefix)
  await other.connect()
  t.teardown(async () => {
    await s.close()
    await other.close()
    await redis.stop()
  })

  t.test("restart: the dead owner's import fails, the live one's keeps running", async (t) => {
    const { workspaceId: ws } = await s.tenant()
    const runner = s.app.parts.imports
    const running = async (): Promise<ImportRecord> => {
      const r: ImportRecord = {
        id: await s.app.parts.store.nextId('imports'),
        workspace_id: ws,
        status: 'running',
        accepted: 0,
        duplicates: 0,
        rejected: 0,
        error: null,
        created_at: new Date().toISOString(),
        finished_at: null,
      }
      await runner.save(r)
      return r
    }
    const orphan = await running() // its instance died: nobody holds its lease
    const live = await running() // running on the other instance
    t.ok(await other.lease(`import:${live.id}`, 'instance-b', IMPORT_LEASE_MS))

    await s.close()
    s = await startTestServer({ REDIS_URL: redis.url }, { dataDir })
    const get = (id: number) => s.admin('GET', `/imports/${id}`).then((b) => b.data)
    t.match(await get(orphan.id), { status: 'failed', error: /interrupted/ })
    t.match(await get(live.id), { status: 'running', error: null })

    // The other instance dies; its lease lapses; the next scheduler pass fails the import.
    await other.release(`import:${live.id}`, 'instance-b')
    await s.admin('POST', '/scheduler/run')
    t.match(await get(live.id), { status: 'failed', error: /interrupted/ })
  })

  t.test('an import this instance runs is never taken for dead', async (t) => {
    const { workspaceId: ws } = await s.tenant()
    const body = Array.from({ length: 3 }, (_, i) =>
      JSON.stringify({
        meter: `m${i}`,
        kind: 'saldo',
        value: i,
        unit: 'kwh',
        recorded_at: '2025-01-01T00:00:00Z',
      }),
    ).join('\n')
    const r = await s.call('POST', `/admin/v1/workspaces/${ws}/imports`, {
      token: s.adminToken,
      raw: body,
      headers: { 'content-type': 'application/x-ndjson' },
    })
    t.equal(r.status, 202)
    t.equal(await s.app.parts.imports.failInterrupted(), 0, 'not failed by its own sweep')
    await s.app.parts.imports.drain()
    t.match((await s.admin('GET', `/imports/${r.body.data.id}`)).data, { status: 'completed' })
  })
}
