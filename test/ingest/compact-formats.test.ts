// Compact wM-Bus frames through the service: the formats learnt from full frames are kept
// in the store, per workspace, so they survive a restart and never cross tenants.
import t from 'tap'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { compactFrame, fullFrame } from '../helpers/wmbus.js'

let s: TestServer = await startTestServer()
const dataDir = s.dataDir
t.teardown(() => s.close())

const at = (min: number) => new Date(Date.UTC(2025, 0, 1, 0, min)).toISOString()
const first = await s.tenant({ workspace: { name: 'first' } })
const second = await s.tenant({ workspace: { name: 'second' } })
const report = async (token: string, hex: string, min: number) => {
  const r = await s.call('POST', '/api/v1/reportData', {
    token,
    body: {
      readings: [{ profile: 'wmbus_oms', payload: { telegram: hex }, recorded_at: at(min) }],
    },
  })
  return r.body.results[0] as { status: string; reason?: string }
}

t.test('a compact frame decodes after a restart that emptied every worker', async (t) => {
  t.equal((await report(first.token, fullFrame(24681357, 1000), 1)).status, 'created')
  await s.close()
  s = await startTestServer({}, { dataDir })
  const r = await report(first.token, compactFrame(24681357, 2500), 2)
  t.equal(r.status, 'created', JSON.stringify(r))
})

t.test("another workspace's full frame does not teach this one", async (t) => {
  const r = await report(second.token, compactFrame(24681357, 2600), 3)
  t.equal(r.status, 'rejected_undecodable')
  t.match(r.reason, /compact frame/)
})
