// The cluster's load balancer as shipped (deploy/nginx/meterflow.conf), run by a real nginx in
// front of two stand-in backends that answer with their name: readings stay with one
// instance per client address and move when it is down; everything else is balanced per
// request. Skipped with a notice where nginx is not installed (`.ci/run` installs it).
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { canConnect, freePort } from '../helpers/redis.js'

const NOTICE = 'nginx not found: load balancer tests SKIPPED (install nginx-light; .ci/run does)'
const nginx = ['/usr/sbin/nginx', 'nginx'].find(
  (bin) => spawnSync(bin, ['-v'], { stdio: 'ignore' }).status === 0,
)

if (!nginx) {
  t.comment(NOTICE)
  console.warn(NOTICE)
  t.plan(0, NOTICE)
} else {
  const backends = await Promise.all(
    ['one', 'two'].map(async (name) => {
      const port = await freePort()
      const server = http.createServer((req, res) => {
        req.resume()
        req.on('end', () => res.end(name))
      })
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
      return { name, port, server }
    }),
  )
  t.teardown(() => Promise.all(backends.map((b) => new Promise((r) => b.server.close(r)))))

  // The shipped site, its upstream hosts and port swapped for the stand-ins and a free port.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-nginx-'))
  const port = await freePort()
  const site = fs
    .readFileSync(new URL('../../deploy/nginx/meterflow.conf', import.meta.url), 'utf8')
    .replaceAll('meterflow-1:8080', `127.0.0.1:${backends[0]!.port}`)
    .replaceAll('meterflow-2:8080', `127.0.0.1:${backends[1]!.port}`)
    .replace('listen 8080;', `listen 127.0.0.1:${port};`)
  fs.writeFileSync(path.join(dir, 'site.conf'), site)
  fs.writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  include ${dir}/site.conf;
}
`,
  )
  const proc = spawn(nginx, ['-c', `${dir}/nginx.conf`, '-p', dir, '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  proc.stderr!.on('data', (b) => (stderr += String(b)))
  t.teardown(async () => {
    // SIGTERM: the master stops its workers (killed, it would leave them serving the port).
    const exited = new Promise((r) => proc.once('exit', r))
    proc.kill('SIGTERM')
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())])
    fs.rmSync(dir, { recursive: true, force: true })
  })
  for (let i = 0; i < 100 && !(await canConnect(port)); i++)
    await new Promise((r) => setTimeout(r, 50))

  /** Which backend answered; `from` is the client's address (any of 127.0.0.0/8). */
  const ask = (method: string, url: string, from = '127.0.0.1') =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, method, path: url, localAddress: from, agent: false },
        (res) => {
          let body = ''
          res.on('data', (b) => (body += String(b)))
          res.on('end', () => resolve({ status: res.statusCode!, body }))
        },
      )
      req.on('error', reject)
      req.end(method === 'POST' ? '{"readings":[]}' : undefined)
    })
  const addresses = Array.from({ length: 16 }, (_, i) => `127.0.0.${i + 1}`)

  t.test('the shipped configuration loads', async (t) => {
    t.ok(await canConnect(port), `nginx listens (${stderr.trim() || 'no errors'})`)
  })

  t.test('readings: one instance per client address, both instances used', async (t) => {
    const byAddress = new Map<string, string>()
    for (const from of addresses) {
      const seen = new Set<string>()
      for (let i = 0; i < 3; i++) {
        seen.add((await ask('POST', '/api/v1/reportData', from)).body)
        seen.add((await ask('POST', '/api/v1/webhooks/abc', from)).body)
      }
      t.equal(seen.size, 1, `${from}: ${[...seen].join(', ')}`)
      byAddress.set(from, [...seen][0]!)
    }
    t.same(new Set(byAddress.values()), new Set(['one', 'two']), 'addresses spread over both')
  })

  t.test('other routes are balanced per request; /metrics is not served', async (t) => {
    const seen = new Set<string>()
    for (let i = 0; i < 6; i++) seen.add((await ask('GET', '/api/v1/meters')).body)
    t.same(seen, new Set(['one', 'two']))
    t.equal((await ask('GET', '/metrics')).status, 404)
  })

  t.test("an instance down: its clients' readings reach the other", async (t) => {
    const one = backends[0]!
    const clients: string[] = []
    for (const a of addresses)
      if ((await ask('POST', '/api/v1/reportData', a)).body === 'one') clients.push(a)
    t.ok(clients.length > 0, `addresses on 'one': ${clients.join(', ')}`)
    await new Promise((r) => one.server.close(r))
    one.server.closeAllConnections()
    for (const a of clients) t.equal((await ask('POST', '/api/v1/reportData', a)).body, 'two', a)
  })
}
