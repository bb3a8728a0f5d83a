// One rule for every outbound request (event deliveries and transfers) under
// EVENT_BLOCK_PRIVATE_TARGETS=1: the address checked is the address connected to (a name is
// resolved once, so DNS rebinding cannot slip a loopback address in after the check),
// IPv6 spellings that reach IPv4 hosts are refused, and redirects are never followed.
import dns from 'node:dns'
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { isPrivateAddress } from '../../src/events/targets.js'
import { runTransfer, TransferRepo, type Transfer } from '../../src/scheduler/transfers.js'
import { startTestServer } from '../helpers/server.js'
import { startReceiver } from './receiver.js'

t.test('addresses: IPv4 embedded in IPv6 is judged or refused', async (t) => {
  for (const ip of [
    '::7f00:1', // IPv4-compatible 127.0.0.1, the URL parser's spelling of [::127.0.0.1]
    '::a00:1',
    '::ffff:7f00:1', // IPv4-mapped loopback, hex spelling
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '64:ff9b::7f00:1', // NAT64
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::a00:1',
    '2002:7f00:1::1', // 6to4
    '2002:c0a8:101::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    '::',
    '::1',
    'fe80::1%eth0',
  ])
    t.ok(isPrivateAddress(ip), `${ip} is refused`)
  for (const ip of ['93.184.216.34', '2606:4700:4700::1111', '::ffff:93.184.216.34'])
    t.notOk(isPrivateAddress(ip), `${ip} is public`)
})

const clock = new ManualClock(Date.parse('2030-01-02T03:04:05.000Z'))
const s = await startTestServer(
  { EVENT_BLOCK_PRIVATE_TARGETS: '1', EVENT_TIMEOUT_MS: '1500' },
  { clock },
)
t.teardown(() => s.close())

t.test('admin calls: IPv6 forms of private targets are 422 naming url', async (t) => {
  const { workspaceId: ws } = await s.tenant()
  for (const url of [
    'http://[::7f00:1]:8080/hook',
    'http://[::127.0.0.1]/hook',
    'http://[64:ff9b::a00:1]/hook',
    'http://[2002:c0a8:101::1]/hook',
    'http://[::ffff:7f00:1]/hook',
  ]) {
    const sub = await s.call('POST', `/admin/v1/workspaces/${ws}/event-subscriptions`, {
      token: s.adminToken,
      body: { url, events: ['*'] },
    })
    t.equal(sub.status, 422, `subscription ${url}`)
    t.ok(sub.body.errors?.url, 'names url')
  }
  for (const url of ['http://127.0.0.1:9/x', 'http://[::7f00:1]/x', 'http://localhost/x']) {
    const tr = await s.call('POST', `/admin/v1/workspaces/${ws}/transfers`, {
      token: s.adminToken,
      body: { url, cron: '0 2 * * *' },
    })
    t.equal(tr.status, 422, `transfer ${url}`)
    t.ok(tr.body.errors?.url, 'names url')
  }
})

t.test('DNS rebinding: the name is resolved once and that address is connected to', async (t) => {
  const rx = await startReceiver(200)
  t.teardown(() => rx.close())
  const port = new URL(rx.url).port
  // The attacker's DNS: a public address for the first question, loopback afterwards.
  const host = 'rebind.meterflow.test'
  let asked = 0
  const answer = () => (asked++ === 0 ? '203.0.113.7' : '127.0.0.1')
  const lookup = dns.lookup
  const promisesLookup = dns.promises.lookup
  ;(dns as any).lookup = (h: string, o: any, cb: any) => {
    if (typeof o === 'function') [cb, o] = [o, {}]
    if (h !== host) return lookup(h, o, cb)
    const address = answer()
    return o?.all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4)
  }
  ;(dns.promises as any).lookup = async (h: string, o: any) => {
    if (h !== host) return promisesLookup(h, o)
    const address = answer()
    return o?.all ? [{ address, family: 4 }] : { address, family: 4 }
  }
  t.teardown(() => {
    ;(dns as any).lookup = lookup
    ;(dns.promises as any).lookup = promisesLookup
  })

  const { workspaceId: ws } = await s.tenant()
  const { repo, outbox, engine } = s.app.parts.events
  const id = await repo.nextSubscriptionId()
  await repo.saveSubscription({
    id,
    workspace_id: ws,
    url: `http://${host}:${port}/hook`,
    events: ['*'],
    enabled: true,
    signing_secret: 'whsec_test',
    consecutive_failures: 0,
    created_at: clock.now(),
  })
  await outbox.invalidate()
  await outbox.emit(ws, 'meter.created', { n: 1 })
  await engine.runDue()
  await engine.idle()
  t.equal(rx.received.length, 0, 'nothing reached the loopback receiver')
  t.equal(asked, 1, 'one resolution per attempt')
  const [d] = (await s.admin('GET', `/event-subscriptions/${id}/deliveries`)).data
  t.match(d, { status: 'pending', attempts: 1, last_status_code: null })
  t.ok(d.last_error, 'the attempt failed')

  // Once the name answers loopback at the connection's own lookup, the attempt is refused.
  clock.advance(60_000)
  await engine.runDue()
  await engine.idle()
  const [d2] = (await s.admin('GET', `/event-subscriptions/${id}/deliveries`)).data
  t.match(d2, { attempts: 2, last_error: /private/ })
  t.equal(rx.received.length, 0)
  await s.admin('PATCH', `/event-subscriptions/${id}`, { enabled: false })
})

/** A stored transfer (as if created before EVENT_BLOCK_PRIVATE_TARGETS was switched on). */
async function storedTransfer(ws: number, url: string): Promise<Transfer> {
  const tr: Transfer = {
    id: await s.app.parts.store.nextId('transfers'),
    workspace_id: ws,
    url,
    cron: '0 2 * * *',
    group_id: null,
    last_run_at: null,
    last_status: null,
    created_at: new Date(clock.now()).toISOString(),
  }
  await new TransferRepo(s.app.parts).save(tr)
  return tr
}

t.test('transfers: a private target is refused at send time, nothing is sent', async (t) => {
  const rx = await startReceiver(200)
  t.teardown(() => rx.close())
  const { workspaceId: ws } = await s.tenant()
  const repo = new TransferRepo(s.app.parts)
  const tr = await storedTransfer(ws, rx.url)
  const ok = await runTransfer(s.app.parts, repo, tr, clock.now())
  t.equal(ok, false)
  t.equal(rx.received.length, 0, 'the loopback receiver got nothing')
  t.match((await repo.get(tr.id))?.last_status, /failed: .*private/)
})
