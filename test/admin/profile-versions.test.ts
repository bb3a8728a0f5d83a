// Profile versions under concurrency (issue 14, item 5): parallel POSTs of one key, on one
// instance and across two instances sharing a store and a redis-server, each get their own
// version, and every version stays stored.
import t from 'tap'
import { RedisCoord } from '../../src/coord/redis.js'
import { ProfileRepo } from '../../src/store/profiles.js'
import { redisAvailable, REDIS_SKIP_NOTICE, startRedis } from '../helpers/redis.js'
import { startTestServer } from '../helpers/server.js'

const body = (name: string) => ({ key: 'race_v', name, kind: 'saldo', unit: 'm3' })

async function storedVersions(s: Awaited<ReturnType<typeof startTestServer>>, ws: number) {
  const rows = await s.app.parts.store.sql.query<{ version: string | number; name: string }>(
    `SELECT version, name FROM profiles FINAL WHERE workspace_id = ${ws} AND key = 'race_v' ORDER BY version`,
  )
  return rows.map((r) => ({ version: Number(r.version), name: r.name }))
}

t.test('parallel POSTs on one instance get versions 1..n', async (t) => {
  const s = await startTestServer()
  t.teardown(() => s.close())
  const { workspaceId: ws } = await s.tenant()
  const n = 4
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      s.call('POST', `/admin/v1/workspaces/${ws}/profiles`, {
        token: s.adminToken,
        body: body(`p${i}`),
      }),
    ),
  )
  for (const a of answers) t.equal(a.status, 201, a.text)
  const versions = answers.map((a) => a.body.data.version).sort()
  t.same(versions, [1, 2, 3, 4], 'each POST its own version')
  const stored = await storedVersions(s, ws)
  t.same(
    stored.map((r) => r.version),
    [1, 2, 3, 4],
    'every version stored, none overwritten',
  )
  for (const a of answers)
    t.equal(stored.find((r) => r.version === a.body.data.version)?.name, a.body.data.name)
})

t.test('two instances sharing Redis never hand out one version twice', async (t) => {
  if (!redisAvailable()) {
    t.comment(REDIS_SKIP_NOTICE)
    console.warn(REDIS_SKIP_NOTICE)
    return
  }
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const s = await startTestServer({ REDIS_URL: redis.url })
  t.teardown(() => s.close())
  const { workspaceId: ws } = await s.tenant()
  const coord2 = new RedisCoord(redis.url, (s.app.parts.coord as RedisCoord).prefix)
  await coord2.connect()
  t.teardown(() => coord2.close())
  const second = new ProfileRepo(s.app.parts.store.sql, coord2)
  await second.init()
  const first = s.app.parts.profiles
  const made = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      (i % 2 ? second : first).create(ws, {
        key: 'race_v',
        name: `i${i}`,
        kind: 'saldo',
        unit: 'm3',
        decoder: null,
        status_map: null,
      }),
    ),
  )
  t.same(made.map((p) => p.version).sort(), [1, 2, 3, 4, 5, 6])
  t.same(
    (await storedVersions(s, ws)).map((r) => r.version),
    [1, 2, 3, 4, 5, 6],
  )
  const next = await s.call('POST', `/admin/v1/workspaces/${ws}/profiles`, {
    token: s.adminToken,
    body: body('after'),
  })
  t.equal(next.body.data.version, 7, next.text)
})
