// The `meterflow` CLI against a real in-process server: quickstart prints a token that gets
// 200 from GET /api/v1/ping; the command table covers every call of operator-api.md; errors
// (unreachable, 401, missing option, 422) are clear and exit 1.
import { spawn, spawnSync } from 'node:child_process'
import path from 'node:path'
import t from 'tap'
import { buildRequest, COMMANDS, human, parseArgs } from '../../bin/meterflow.js'
import { freePort } from '../helpers/redis.js'
import { runCli } from '../helpers/cli.js'
import { startTestServer } from '../helpers/server.js'

const root = path.resolve(import.meta.dirname, '../..')
const s = await startTestServer()
t.teardown(() => s.close())

const cli = (args: string[], env: Record<string, string> = {}) => runCli(s, args, env)

t.test('quickstart --json prints a token that gets 200 from /api/v1/ping', async (t) => {
  const r = await cli(['quickstart', '--json'])
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.match(out.token, { token: /^mf_/, scopes: ['data:report', 'data:read', 'masterdata:write'] })
  t.match(out.user, { owner: true, permissions: ['groups.manage'] })
  t.ok(out.workspace.id > 0)
  const ping = await s.call('GET', '/api/v1/ping', { token: out.token.token })
  t.equal(ping.status, 200)
  t.equal(ping.body.application, 'meterflow')
  t.match(out.curl.report, `${s.url}/api/v1/reportData`)
  t.match(out.curl.report, `Authorization: Bearer ${out.token.token}`)
  const body = JSON.parse(/-d '([^']+)'/.exec(out.curl.report)![1]!)
  t.match(body, { readings: [{ meter: 'demo-1', kind: 'saldo', value: 1.5, unit: 'kwh' }] })
  t.ok(
    Math.abs(Date.parse(body.readings[0].recorded_at) - Date.now()) < 60_000,
    'recorded_at is now',
  )
})

t.test('quickstart (human) reads DATA_DIR/admin-token and prints working curl lines', async (t) => {
  const r = await cli(['quickstart'], { ADMIN_TOKEN: '', DATA_DIR: s.dataDir })
  t.equal(r.code, 0, r.stderr)
  const token = /^\s+(mf_\S+)$/m.exec(r.stdout)?.[1]
  t.ok(token, 'the token is on a line of its own')
  t.match(r.stdout, /curl -sS -X POST \S+\/api\/v1\/reportData/)
  const pingLine = /^\s+(curl -sS \S+\/api\/v1\/ping .*)$/m.exec(r.stdout)?.[1]
  t.ok(pingLine, 'a ping curl line')
  if (spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0) {
    // Async: the server runs in this process, so a sync child would block its answers.
    const child = spawn('sh', ['-c', pingLine!], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    await new Promise((r) => child.on('exit', r))
    t.equal(JSON.parse(out).application, 'meterflow', 'the printed ping curl line works')
    const reportLine = /^\s+(curl -sS -X POST \S+\/api\/v1\/reportData .*)$/m.exec(r.stdout)![1]!
    const rc = spawn('sh', ['-c', reportLine], { stdio: ['ignore', 'pipe', 'inherit'] })
    let rout = ''
    rc.stdout.on('data', (d) => (rout += d))
    await new Promise((r) => rc.on('exit', r))
    t.match(
      JSON.parse(rout),
      { accepted: 1, results: [{ meter: 'demo-1', status: 'created' }] },
      'the printed reportData curl line stores the first reading',
    )
  } else t.comment('curl not installed: printed curl line not executed')
})

t.test('table commands: create, list, update, revoke', async (t) => {
  const ws = await cli([
    'workspaces:create',
    '--name',
    'cli ws',
    '--retention-days',
    '90',
    '--json',
  ])
  t.equal(ws.code, 0, ws.stderr)
  const wsId = JSON.parse(ws.stdout).data.id
  const user = await cli([
    'users:create',
    `--workspace=${wsId}`,
    '--email',
    'a@example.com',
    '--owner',
    '--json',
  ])
  const userId = JSON.parse(user.stdout).data.id
  t.match(JSON.parse(user.stdout).data, { owner: true, permissions: [] })
  const upd = await cli([
    'users:update',
    '--user',
    String(userId),
    '--permissions',
    'groups.manage',
    '--json',
  ])
  t.same(JSON.parse(upd.stdout).data.permissions, ['groups.manage'])
  const tok = await cli([
    'tokens:create',
    '--workspace',
    String(wsId),
    '--user',
    String(userId),
    '--scopes',
    'data:report,data:read',
    '--rate-limit',
    '7',
    '--json',
  ])
  const token = JSON.parse(tok.stdout).data
  t.match(token, { scopes: ['data:report', 'data:read'], rate_limit_per_minute: 7 })
  const ping = await s.call('GET', '/api/v1/ping', { token: token.token })
  t.equal(ping.headers['x-ratelimit-limit'], '7')

  const list = await cli(['workspaces:list'])
  t.equal(list.code, 0)
  t.match(list.stdout, /^id\s+name\s+plan_meter_limit/m, 'human output is a table with a header')
  t.match(list.stdout, /cli ws/)
  const show = await cli([
    'workspaces:update',
    '--workspace',
    String(wsId),
    '--plan-meter-limit',
    'null',
    '--name',
    'renamed',
  ])
  t.match(show.stdout, /^name\s+renamed$/m, 'human output of one object is key/value lines')

  const rev = await cli(['tokens:revoke', '--token', String(token.id), '--json'])
  t.same(JSON.parse(rev.stdout), { data: { id: token.id, revoked: true } })
  t.equal((await s.call('GET', '/api/v1/ping', { token: token.token })).status, 401)

  const call = await cli(['call', 'GET', `/workspaces/${wsId}`, '--json'])
  t.equal(JSON.parse(call.stdout).data.name, 'renamed', 'call METHOD PATH')
  const call2 = await cli([
    'call',
    'PATCH',
    `/admin/v1/workspaces/${wsId}`,
    '{"name":"via call"}',
    '--json',
  ])
  t.equal(JSON.parse(call2.stdout).data.name, 'via call', 'call with a full path and a JSON body')
  const run = await cli(['scheduler:run', '--json'])
  t.equal(run.code, 0, run.stderr)
  t.ok(JSON.parse(run.stdout).data.ran_at)
})

t.test('clear errors, exit 1', async (t) => {
  const port = await freePort()
  const down = await cli(['workspaces:list'], { METERFLOW_URL: `http://127.0.0.1:${port}` })
  t.equal(down.code, 1)
  t.match(down.stderr, /cannot reach Meterflow at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/)

  const bad = await cli(['workspaces:list'], { ADMIN_TOKEN: 'wrong-token-wrong-token' })
  t.equal(bad.code, 1)
  t.match(bad.stderr, /admin token was refused \(401\)/)

  const none = await cli(['workspaces:list'], { ADMIN_TOKEN: '', DATA_DIR: '/nonexistent' })
  t.equal(none.code, 1)
  t.match(none.stderr, /no admin token.*\/nonexistent\/admin-token/)

  const missing = await cli(['users:create', '--workspace', '1'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /--email is required/)

  const typo = await cli(['workspaces:create', '--nmae', 'x'])
  t.match(typo.stderr, /unknown option --nmae/)
  const notInt = await cli(['workspaces:show', '--workspace', 'one'])
  t.match(notInt.stderr, /--workspace must be an integer/)

  const invalid = await cli([
    'tokens:create',
    '--workspace',
    '1',
    '--user',
    '1',
    '--scopes',
    'data:everything',
  ])
  t.equal(invalid.code, 1)
  t.match(invalid.stderr, /failed with 422/)
  t.match(invalid.stderr, /scopes\.0/, 'field errors are listed')

  const unknown = await cli(['frobnicate'])
  t.match(unknown.stderr, /unknown command frobnicate/)
  const help = await cli(['help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /quickstart/)
  t.match(help.stdout, /service:backfill-reading-quality/)
})

// Every admin call of operator-api.md, as (method, path pattern).
const SPEC_CALLS = [
  'POST /workspaces',
  'GET /workspaces/{}',
  'PATCH /workspaces/{}',
  'POST /workspaces/{}/users',
  'PATCH /users/{}',
  'POST /workspaces/{}/tokens',
  'DELETE /tokens/{}',
  'POST /workspaces/{}/webhook-endpoints',
  'PATCH /webhook-endpoints/{}',
  'POST /webhook-endpoints/{}/rotate-token',
  'POST /workspaces/{}/event-subscriptions',
  'PATCH /event-subscriptions/{}',
  'POST /event-subscriptions/{}/rotate-secret',
  'GET /event-subscriptions/{}/deliveries',
  'POST /deliveries/{}/retry',
  'GET /workspaces/{}/outbox',
  'PUT /meters/{}/lifecycle',
  'PUT /meters/{}/profile',
  'PUT /meters/{}/wmbus-key',
  'POST /meters/{}/exchanges',
  'GET /workspaces/{}/profiles',
  'POST /workspaces/{}/profiles',
  'POST /workspaces/{}/alert-rules',
  'GET /workspaces/{}/alerts',
  'POST /alerts/{}/resolve',
  'POST /workspaces/{}/imports',
  'GET /imports/{}',
  'POST /workspaces/{}/transfers',
  'POST /scheduler/run',
  'POST /jobs/backfill-reading-quality',
]

t.test('the command table covers every admin call of operator-api.md', async (t) => {
  const have = new Set(
    Object.values(COMMANDS).map((c) => `${c.method} ${c.path.replace(/\{\w+\}/g, '{}')}`),
  )
  for (const call of SPEC_CALLS) t.ok(have.has(call), call)
  t.ok(COMMANDS['service:backfill-reading-quality'], 'service:backfill-reading-quality exists')
})

t.test(
  'each command builds a request the server routes (where the route exists yet)',
  async (t) => {
    const sample: Record<string, string> = {
      int: '1',
      'int?': 'null',
      'number?': '2.5',
      string: 'x',
      'string?': 'null',
      bool: 'true',
      list: 'a,b',
      json: '{"fields":{}}',
      file: path.join(root, 'package.json'),
    }
    const missing: string[] = []
    for (const [name, cmd] of Object.entries(COMMANDS)) {
      const opts: Record<string, string> = {}
      for (const [k, o] of Object.entries(cmd.options ?? {})) opts[k] = sample[o.type]!
      const req = buildRequest(name, cmd, opts)
      t.match(req.path, /^\/[\w/.-]+(\?.*)?$/, `${name}: ${req.method} ${req.path}`)
      if (req.method !== 'GET' && req.method !== 'DELETE')
        t.ok(req.body !== undefined, `${name} has a body`)
      const m = s.app.router.match(req.method, '/admin/v1' + req.path.split('?')[0])
      if (m.kind === 'not_found') missing.push(name)
      else t.equal(m.kind, 'found', `${name}: the server has ${req.method} for this path`)
    }
    if (missing.length) t.comment(`routes not registered yet: ${missing.join(', ')}`)
    const b = buildRequest(
      'service:backfill-reading-quality',
      COMMANDS['service:backfill-reading-quality']!,
      {
        workspace: '3',
        meter: '9',
      },
    )
    t.same(
      [b.method, b.path, JSON.parse(String(b.body))],
      ['POST', '/jobs/backfill-reading-quality', { workspace_id: 3, meter_id: 9 }],
    )
  },
)

t.test('argument parsing and human output', async (t) => {
  t.same(parseArgs(['--a', '1', '--b=2', '--flag', 'pos', '--x']), {
    opts: { a: '1', b: '2', flag: 'pos', x: true },
    positional: [],
  })
  t.same(parseArgs(['GET', '/x', '--json']).positional, ['GET', '/x'])
  t.equal(human({ data: [] }), '(none)')
  t.equal(human({ data: { a: 1, bb: null } }), 'a   1\nbb  -')
})
