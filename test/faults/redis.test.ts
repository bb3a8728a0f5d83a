// Redis unreachable: reportData (and the stream) need coordination (rate limit, per-meter
// locks), so they answer a clear 503 {message} at once, store nothing, and work again
// without a restart when redis-server is back.
import t from 'tap'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { startTestServer } from '../helpers/server.js'
import { connectWs } from '../stream/ws-client.js'

if (!redisAvailable({ own: true })) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped')
} else {
  const redis = await startRedis({ own: true })
  const s = await startTestServer({ REDIS_URL: redis.url })
  t.teardown(async () => {
    await s.close()
    await redis.stop()
  })
  const at = (min: number) => new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString()
  const item = (meter: string, min: number) => ({
    meter,
    kind: 'saldo',
    value: min,
    unit: 'kwh',
    recorded_at: at(min),
  })
  const count = async (ws: number) =>
    Number(
      (
        await s.app.parts.store.sql.query<{ n: string }>(
          'SELECT count() AS n FROM readings FINAL WHERE workspace_id = {ws:UInt64}',
          { ws },
        )
      )[0]!.n,
    )

  t.test('503 while Redis is down, nothing stored, recovery without restart', async (t) => {
    const ten = await s.tenant()
    const report = (readings: unknown[]) =>
      s.call('POST', '/api/v1/reportData', { token: ten.token, body: { readings } })
    t.equal((await report([item('r1', 1)])).status, 201)
    const c = await connectWs(s.url.replace('http', 'ws') + '/api/v1/stream', {
      authorization: `Bearer ${ten.token}`,
    })
    t.equal(c.status, 101)

    await redis.kill()
    const started = Date.now()
    const down = await report([item('r1', 2), item('r2', 1)])
    t.equal(down.status, 503)
    t.same(Object.keys(down.body), ['message'])
    t.match(down.body.message, /Redis/)
    t.ok(Date.now() - started < 3000, 'answered at once, not queued')
    c.send({ id: 's1', readings: [item('r3', 1)] })
    const a = await c.next()
    t.same([a.id, a.status], ['s1', 503], 'a streamed message gets the same 503')
    t.match(a.body.message, /Redis/)
    t.equal((await s.call('GET', '/healthz')).status, 200, 'healthz does not need Redis')
    t.equal(await count(ten.workspaceId), 1, 'nothing of the refused batches was stored')

    await redis.start()
    let status = 0
    for (let i = 0; i < 100 && status !== 201; i++) {
      status = (await report([item('r1', 2), item('r2', 1)])).status
      if (status !== 201) await new Promise((r) => setTimeout(r, 100))
    }
    t.equal(status, 201, 'the same batch is stored once Redis is back')
    c.send({ id: 's2', readings: [item('r3', 1)] })
    t.equal((await c.next()).status, 201, 'the open stream works again too')
    t.equal(await count(ten.workspaceId), 4)
    c.close()
  })
}
