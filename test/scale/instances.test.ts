// Three service processes on one ClickHouse server and one Redis, raced against each other
// the way a load balancer spreads a deployment's traffic: every rule that must hold
// across instances is checked through the public API of real processes.
import crypto from 'node:crypto'
import fs from 'node:fs'
import t from 'tap'
import { startClickHouse } from '../helpers/clickhouse.js'
import { REDIS_SKIP_NOTICE, redisAvailable, startRedis } from '../helpers/redis.js'
import { request, tmpDataDir, type CallResult } from '../helpers/server.js'
import { compactFrame, fullFrame } from '../helpers/wmbus.js'
import { startReceiver } from '../events/receiver.js'
import { startProc, type Proc } from '../helpers/proc.js'
import { awayFromMinuteEdge } from '../helpers/minute.js'

const ADMIN = 'scale-admin-token-0123456789'
const at = (min: number) => new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

if (!redisAvailable({ own: true })) {
  t.comment(REDIS_SKIP_NOTICE)
  t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
} else {
  const redis = await startRedis({ own: true })
  const ch = process.env.CLICKHOUSE_URL ? null : await startClickHouse()
  const database = `mf_scale_${crypto.randomBytes(4).toString('hex')}`
  const chUrl = new URL(process.env.CLICKHOUSE_URL ?? ch!.url)
  chUrl.pathname = `/${database}`
  const dataDir = tmpDataDir()
  const receiver = await startReceiver(200)
  const procs: Proc[] = []
  t.teardown(async () => {
    for (const p of procs) await p.kill('SIGKILL')
    await receiver.close()
    await redis.stop()
    await ch?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** Reads the shared store directly (the ClickHouse server's HTTP interface). */
  const chRows = async <T>(sql: string): Promise<T[]> => {
    const u = new URL(chUrl.origin)
    u.searchParams.set('database', database)
    u.searchParams.set('default_format', 'JSONEachRow')
    const res = await fetch(u, { method: 'POST', body: sql })
    const text = await res.text()
    if (!res.ok) throw new Error(`clickhouse: ${text}`)
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as T)
  }

  // Started together, as an orchestrator starts replicas: migrations race too.
  const env = {
    ADMIN_TOKEN: ADMIN,
    DATA_DIR: dataDir,
    CLICKHOUSE_URL: chUrl.toString(),
    REDIS_URL: redis.url,
    SCHEDULER: 'on',
    SCHEDULER_INTERVAL_S: '1',
  }
  procs.push(...(await Promise.all([startProc(env), startProc(env), startProc(env)])))
  const [a, b, c] = procs as [Proc, Proc, Proc]
  /** The instance the i-th call goes to, round robin. */
  const via = (i: number) => procs[i % 3]!.url

  const admin = async (url: string, method: string, path: string, body?: unknown) => {
    const r = await request(url, method, `/admin/v1${path}`, { token: ADMIN, body })
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`)
    return r.body.data
  }
  /**
   * A workspace with one user and a token, each made on a different instance (of `on`, the
   * three by default).
   */
  const tenant = async (
    ws: Record<string, unknown>,
    tokenExtra: Record<string, unknown> = {},
    on: readonly Proc[] = [a, b, c],
  ) => {
    const via = (i: number) => on[i % on.length]!.url
    const w = await admin(via(0), 'POST', '/workspaces', ws)
    const u = await admin(via(1), 'POST', `/workspaces/${w.id}/users`, {
      email: `${w.id}@example.com`,
      permissions: ['groups.manage'],
    })
    const tok = await admin(via(2), 'POST', `/workspaces/${w.id}/tokens`, {
      user_id: u.id,
      scopes: ['data:report', 'data:read', 'masterdata:write'],
      rate_limit_per_minute: 100_000,
      ...tokenExtra,
    })
    return { id: w.id as number, token: tok.token as string }
  }
  const report = (url: string, token: string, readings: unknown[]) =>
    request(url, 'POST', '/api/v1/reportData', { token, body: { readings } })
  const statuses = (rs: CallResult[]) =>
    rs.flatMap((r) => (r.body?.results ?? []).map((x: { status: string }) => x.status))
  const count = (xs: string[], s: string) => xs.filter((x) => x === s).length
  const listMeters = async (url: string, token: string) => {
    const r = await request(url, 'GET', '/api/v1/meters?per_page=1000', { token })
    return r.body.data as { id: number; meter_identifier: string }[]
  }
  const readingsOf = async (url: string, token: string, meterId: number) => {
    const q = `meter_id=${meterId}&from=2024-12-31T00:00:00Z&to=2025-01-02T00:00:00Z&per_page=1000`
    const r = await request(url, 'GET', `/api/v1/readings?${q}`, { token })
    return r.body.data as { recorded_at: string; value: number; quality_flags: string[] | null }[]
  }

  const shared = await tenant({ name: 'shared', provision_cap_per_hour: 10_000 })
  const sub = await admin(b.url, 'POST', `/workspaces/${shared.id}/event-subscriptions`, {
    url: receiver.url,
    events: ['meter.created'],
  })

  t.test('the same readings through three instances: each stored once', async (t) => {
    const batch = Array.from({ length: 100 }, (_, i) => ({
      meter: `same-${i % 20}`,
      kind: 'saldo',
      value: 100 + i,
      unit: 'kwh',
      recorded_at: at(Math.floor(i / 20)),
    }))
    // the same batch to each instance at once, twice over
    const first = await Promise.all(procs.map((p) => report(p.url, shared.token, batch)))
    const second = await Promise.all(procs.map((p) => report(p.url, shared.token, batch)))
    for (let i = 0; i < batch.length; i++) {
      const per = first.map((r) => r.body.results[i].status)
      if (count(per, 'created') !== 1 || count(per, 'duplicate') !== 2) {
        t.fail(`item ${i}: ${per.join(' ')}`)
        return
      }
    }
    t.pass('every item: created by exactly one instance, duplicate on the two others')
    t.same(
      second.map((r) => r.status),
      [200, 200, 200],
      'the retry of everything is all duplicates (200) on every instance',
    )
    const meters = (await listMeters(c.url, shared.token)).filter((m) =>
      m.meter_identifier.startsWith('same-'),
    )
    t.equal(meters.length, 20, 'each of the 20 meters was created once')
    t.equal(new Set(meters.map((m) => m.id)).size, 20, 'with 20 distinct ids')
    let stored = 0
    for (const m of meters) stored += (await readingsOf(via(m.id), shared.token, m.id)).length
    t.equal(stored, 100, 'exactly 100 readings stored')
  })

  t.test('meter.created is delivered once per meter though three instances deliver', async (t) => {
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline && receiver.received.length < 20) await sleep(200)
    await sleep(2500) // a double send by a second instance would arrive by now
    const ids = receiver.received.map((r) => String(r.headers['x-service-delivery']))
    const meters = receiver.received.map(
      (r) => JSON.parse(r.body.toString()).data.meter.identifier as string,
    )
    t.equal(ids.length, 20, '20 requests for 20 new meters')
    t.equal(new Set(ids).size, ids.length, 'no delivery id arrived twice')
    t.equal(new Set(meters).size, 20, 'one event per meter')
    const list = await admin(c.url, 'GET', `/event-subscriptions/${sub.id}/deliveries`)
    t.ok(
      list.every((d: { status: string; attempts: number }) => d.status === 'delivered'),
      'every delivery is marked delivered',
    )
    t.ok(
      list.every((d: { attempts: number }) => d.attempts === 1),
      'each after exactly one attempt',
    )
  })

  t.test('per-meter order and quality flags are those of one instance', async (t) => {
    // saldo readings with a decrease, a late one and an implausible jump
    const series = [
      [0, 100],
      [10, 110],
      [20, 105],
      [40, 130],
      [30, 120],
      [50, 90_000],
      [60, 90_010],
    ] as const
    const item = (meter: string, [min, value]: readonly [number, number]) => ({
      meter,
      kind: 'saldo',
      value,
      unit: 'kwh',
      recorded_at: at(min),
    })
    for (let i = 0; i < series.length; i++) {
      const one = await report(a.url, shared.token, [item('order-one', series[i]!)])
      const spread = await report(via(i), shared.token, [item('order-spread', series[i]!)])
      t.same(statuses([spread]), statuses([one]), `reading ${i}: same status`)
    }
    const meters = await listMeters(b.url, shared.token)
    const idOf = (name: string) => meters.find((m) => m.meter_identifier === name)!.id
    const one = await readingsOf(a.url, shared.token, idOf('order-one'))
    const spread = await readingsOf(c.url, shared.token, idOf('order-spread'))
    t.equal(one.length, series.length, 'every reading stored')
    t.ok(
      one.some((r) => r.quality_flags !== null),
      `the series carries quality flags (${JSON.stringify(one.map((r) => r.quality_flags))})`,
    )
    const strip = (rs: typeof one) =>
      rs.map((r) => ({ at: r.recorded_at, value: r.value, flags: r.quality_flags }))
    t.same(strip(spread), strip(one), 'spread over three instances: same readings and flags')
  })

  t.test('the hourly provisioning cap is exact under racing creates', async (t) => {
    const capped = await tenant({ name: 'capped', provision_cap_per_hour: 5 })
    const rs = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        report(via(i), capped.token, [
          { meter: `cap${i}`, kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(1) },
        ]),
      ),
    )
    const s = statuses(rs)
    t.equal(count(s, 'created'), 5, 'exactly the cap of 5 new meters')
    t.equal(count(s, 'rejected_provision_limit'), 10, 'the other 10 rejected_provision_limit')
    t.equal((await listMeters(a.url, capped.token)).length, 5, '5 meters exist')
  })

  t.test('the plan meter limit is exact under racing creates', async (t) => {
    const plan = await tenant({ name: 'plan', plan_meter_limit: 4, provision_cap_per_hour: 1000 })
    const rs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        report(via(i), plan.token, [
          { meter: `plan${i}`, kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(1) },
        ]),
      ),
    )
    const s = statuses(rs)
    t.equal(count(s, 'created'), 4, 'exactly the plan limit of 4 meters')
    t.equal(count(s, 'rejected_plan_limit'), 8, 'the other 8 rejected_plan_limit')
    const made = await Promise.all(
      Array.from({ length: 3 }, (_, i) =>
        request(via(i), 'POST', '/api/v1/meters', {
          token: plan.token,
          body: { meter_identifier: `plan-explicit-${i}`, unit: 'kwh' },
        }),
      ),
    )
    t.same(
      made.map((r) => r.status),
      [402, 402, 402],
      'explicit creates past the limit: 402 on every instance',
    )
    t.equal((await listMeters(b.url, plan.token)).length, 4, '4 meters exist')
  })

  t.test('one token rate limit counts requests on every instance', async (t) => {
    const limited = await tenant({ name: 'limited' }, { rate_limit_per_minute: 6 })
    await awayFromMinuteEdge()
    const rs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        report(via(i), limited.token, [
          { meter: `rl${i}`, kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at(i) },
        ]),
      ),
    )
    const codes = rs.map((r) => r.status)
    t.equal(count(codes.map(String), '429'), 6, `exactly 6 of 12 refused (${codes.join(' ')})`)
  })

  t.test('a compact frame decodes on another instance than its full frame', async (t) => {
    const tele = (hex: string, min: number) => ({
      profile: 'wmbus_oms',
      payload: { telegram: hex },
      recorded_at: at(min),
    })
    const full = await report(a.url, shared.token, [tele(fullFrame(55667788, 1000), 1)])
    t.same(statuses([full]), ['created'], 'the full frame is stored on A')
    const compact = await report(b.url, shared.token, [tele(compactFrame(55667788, 2500), 2)])
    t.same(statuses([compact]), ['created'], `B decodes the compact frame (${compact.text})`)
    const later = await report(c.url, shared.token, [tele(compactFrame(55667788, 2600), 3)])
    t.same(statuses([later]), ['created'], 'and so does C')
    const unseen = await report(c.url, shared.token, [tele(compactFrame(11112222, 5), 3)])
    t.same(
      statuses([unseen]),
      ['rejected_undecodable'],
      'a meter whose full frame nobody saw stays undecodable',
    )
  })

  t.test('id sequences are never reissued', async (t) => {
    const make = (i: number) =>
      request(via(i), 'POST', '/api/v1/meterGroups', {
        token: shared.token,
        body: { name: `g${i}` },
      })
    const before = await Promise.all(Array.from({ length: 30 }, (_, i) => make(i)))
    t.same([...new Set(before.map((r) => r.status))], [201], 'every group created')
    const ids = before.map((r) => r.body.data.id as number)
    t.equal(new Set(ids).size, 30, '30 racing creates on three instances: 30 distinct ids')
    // Redis loses its keys: the sequences restart above what the store holds
    await redis.restartEmpty()
    await sleep(500)
    const after = await Promise.all(Array.from({ length: 6 }, (_, i) => make(100 + i)))
    const later = after.filter((r) => r.status === 201).map((r) => r.body.data.id as number)
    t.equal(later.length, 6, 'creates succeed once Redis is back')
    t.ok(
      later.every((id) => id > Math.max(...ids)),
      `after Redis lost its keys every new id is above the old ones (${later.join(',')})`,
    )
  })

  t.test('one scheduler line runs; another instance takes over after a kill', async (t) => {
    type Run = { instance: string; at: string }
    const recent = async (sinceMs: number) =>
      chRows<Run>(
        `SELECT instance, toString(ran_at) AS at FROM scheduler_runs ` +
          `WHERE ran_at > now64(3) - INTERVAL ${sinceMs} MILLISECOND ORDER BY ran_at`,
      )
    await sleep(3500)
    const runs = await recent(3000)
    const holders = [...new Set(runs.map((r) => r.instance))]
    t.ok(runs.length >= 2, `the line ran every second (${runs.length} runs in 3 s)`)
    t.equal(holders.length, 1, `one instance ran it (${holders.join(', ')})`)
    const pid = Number(holders[0]!.split(':')[1])
    const holder = procs.find((p) => p.child.pid === pid)
    t.ok(holder, 'the holder is one of the three processes')
    if (!holder) return
    await holder.kill('SIGKILL')
    let next: string[] = []
    for (let i = 0; i < 40 && next.length === 0; i++) {
      await sleep(250)
      next = [...new Set((await recent(1500)).map((r) => r.instance))].filter(
        (x) => x !== holders[0],
      )
    }
    t.equal(next.length, 1, `after the kill exactly one other instance runs it (${next})`)
  })

  t.test('the meters a killed instance kept are taken over within the lease TTL', async (t) => {
    // An instance keeps the leases of meters it used in its last seconds (meter-locks.ts):
    // after its kill -9 they are free once its heartbeat lapses (10 s), and only then may
    // another instance run those meters' turns. The requests meanwhile wait; they must not
    // fail.
    const alive = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null)
    t.ok(alive.length >= 2, `two instances still run (${alive.length})`)
    const [holder, other] = alive as [Proc, Proc]
    const ws = await tenant({ name: 'takeover', provision_cap_per_hour: 10_000 }, {}, [other])
    const meters = Array.from({ length: 50 }, (_, i) => `takeover-${i}`)
    const batch = (min: number) =>
      meters.map((meter, i) => ({
        meter,
        kind: 'saldo',
        value: 100 + min + i,
        unit: 'kwh',
        recorded_at: at(min),
      }))
    const first = await report(holder.url, ws.token, batch(0))
    t.equal(
      count(statuses([first]), 'created'),
      meters.length,
      'the holder stored the first readings',
    )
    await holder.kill('SIGKILL')
    const started = Date.now()
    const next = await report(other.url, ws.token, batch(15))
    const took = Date.now() - started
    t.equal(next.status, first.status, `answered ${next.status} as the first`)
    t.equal(
      count(statuses([next]), 'created'),
      meters.length,
      'another instance stored the next ones',
    )
    t.ok(took < 12_000, `taken over within the lease TTL and a poll (${took} ms)`)
    const stored = await readingsOf(
      other.url,
      ws.token,
      (await listMeters(other.url, ws.token))[0]!.id,
    )
    t.equal(stored.length, 2, 'both readings of a meter are stored')
  })
}
