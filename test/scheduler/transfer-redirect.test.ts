// Transfers follow the outbound rule of event deliveries: a redirect is an answer (a failed
// run, since it is not 2xx) and is never followed to its Location.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { runTransfer, TransferRepo } from '../../src/scheduler/transfers.js'
import { startReceiver } from '../events/receiver.js'
import { startTestServer } from '../helpers/server.js'

const clock = new ManualClock(Date.parse('2030-01-02T03:04:05.000Z'))
const s2 = await startTestServer({}, { clock })
t.teardown(() => s2.close())

t.test('transfers: a redirect is an answer, never followed', async (t) => {
  const rx = await startReceiver(200)
  t.teardown(() => rx.close())
  const redirector = http.createServer((req, res) => {
    req.resume()
    res.writeHead(307, { location: rx.url }).end()
  })
  await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => redirector.close(() => r())))
  const url = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/t`
  const { workspaceId: ws } = await s2.tenant()
  const tr = (await s2.admin('POST', `/workspaces/${ws}/transfers`, { url, cron: '0 2 * * *' }))
    .data
  const repo = new TransferRepo(s2.app.parts)
  const ok = await runTransfer(s2.app.parts, repo, (await repo.get(tr.id))!, clock.now())
  t.equal(ok, false, 'a 307 is not a 2xx')
  t.equal(rx.received.length, 0, 'the redirect target got nothing')
  t.match((await repo.get(tr.id))?.last_status, /307/)
})
