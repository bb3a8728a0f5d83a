// The CLI's MQTT and preset commands against a real in-process server: mqtt:create with a
// preset (the password never printed back), mqtt:show with status, mqtt:update, mqtt:delete,
// presets:list, webhooks:create --preset. No broker is needed: an unreachable one shows up
// as a disconnected subscription with its error.
import t from 'tap'
import { runCli } from '../helpers/cli.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer({ MQTT_LEASE_S: '2' })
t.teardown(() => s.close())
const { workspaceId: ws } = await s.tenant()

// Every command here answers JSON.
const cli = (args: string[]) => runCli(s, [...args, '--json'])

t.test('mqtt commands', async (t) => {
  const created = await cli([
    'mqtt:create',
    `--workspace=${ws}`,
    '--broker',
    'mqtt://127.0.0.1:1',
    '--topics',
    'wmbusmeters/#,gw/+/raw',
    '--username',
    'u',
    '--password',
    'cli-secret-pw',
    '--preset',
    'wmbusmeters-json',
  ])
  t.equal(created.code, 0, created.stderr)
  t.notMatch(created.stdout, /cli-secret-pw/, 'the password is not printed')
  const sub = JSON.parse(created.stdout).data
  t.same(sub.topics, ['wmbusmeters/#', 'gw/+/raw'])
  t.equal(sub.has_password, true)
  let shown: any
  for (let i = 0; i < 200; i++) {
    shown = JSON.parse((await cli(['mqtt:show', '--subscription', String(sub.id)])).stdout).data
    if (shown.status.last_error) break
    await new Promise((r) => setTimeout(r, 100))
  }
  t.equal(shown.status.connected, false)
  t.ok(shown.status.last_error, `unreachable broker shown: ${shown.status.last_error?.message}`)
  const upd = await cli(['mqtt:update', '--subscription', String(sub.id), '--enabled', 'false'])
  t.equal(JSON.parse(upd.stdout).data.enabled, false)
  const list = await cli(['mqtt:list', '--workspace', String(ws)])
  t.equal(JSON.parse(list.stdout).data.length, 1)
  const del = await cli(['mqtt:delete', '--subscription', String(sub.id)])
  t.same(JSON.parse(del.stdout).data, { id: sub.id, deleted: true })
  const bad = await cli([
    'mqtt:create',
    `--workspace=${ws}`,
    '--broker',
    'ftp://x',
    '--topics',
    'a',
    '--preset',
    'wmbusmeters-json',
  ])
  t.equal(bad.code, 1)
  t.match(bad.stderr + bad.stdout, /broker_url/)
})

t.test('presets', async (t) => {
  const p = await cli(['presets:list'])
  t.equal(p.code, 0, p.stderr)
  t.ok(JSON.parse(p.stdout).data.some((x: any) => x.name === 'chirpstack-v4'))
  const w = await cli(['webhooks:create', `--workspace=${ws}`, '--preset', 'chirpstack-v4'])
  t.equal(w.code, 0, w.stderr)
  t.ok(JSON.parse(w.stdout).data.token)
})
