// The real process (`node --import tsx src/main.ts`): prints `listening on http://HOST:PORT`
// when ready, and on SIGTERM stops accepting, answers what is in flight, and exits 0 with
// nothing acknowledged lost (checked by starting again on the same DATA_DIR).
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { request, tmpDataDir } from '../helpers/server.js'

const root = path.resolve(import.meta.dirname, '../..')
const dataDir = tmpDataDir()
t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))

interface Proc {
  child: ChildProcess
  url: string
  exit: Promise<number | null>
  /** SIGTERM, with a 30 s deadline for the exit. */
  term(): void
  stderr: () => string
}

async function start(opts: { termOnListen?: boolean } = {}): Promise<Proc> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
      SCHEDULER: 'off',
      LOG_LEVEL: 'warn',
      ADMIN_TOKEN: '',
      REDIS_URL: '',
      CLICKHOUSE_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const exit = new Promise<number | null>((r) => child.on('exit', (c) => r(c)))
  // A hang becomes a failure with the child's stderr, not a silent test-runner timeout.
  const deadline = (what: string, ms: number) => {
    const timer = setTimeout(() => {
      process.stderr.write(`sigterm test: ${what} took over ${ms} ms; stderr:\n${stderr}\n`)
      child.kill('SIGKILL')
    }, ms)
    void exit.finally(() => clearTimeout(timer))
    return timer
  }
  const term = () => {
    deadline('exit after SIGTERM', 30_000)
    child.kill('SIGTERM')
  }
  const startTimer = deadline('start-up', 60_000)
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/127\.0\.0\.1:(\d+))\n/.exec(out)
      if (m) {
        // A supervisor may signal the moment it reads the line: handlers must be in place.
        if (opts.termOnListen) term()
        resolve(m[1]!)
      }
    })
    void exit.then((c) => reject(new Error(`exited ${c} before listening: ${stderr}`)))
  })
  clearTimeout(startTimer)
  return { child, url, exit, term, stderr: () => stderr }
}

t.test('listening line, then SIGTERM answers in-flight requests and exits 0', async (t) => {
  const p = await start()
  t.match(p.url, /^http:\/\/127\.0\.0\.1:\d+$/, 'prints listening on http://HOST:PORT')
  t.same((await request(p.url, 'GET', '/healthz')).body, { status: 'ok' })
  const admin = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()

  // Several writes in flight when the signal arrives: each must be answered and kept.
  const writes = Array.from({ length: 8 }, (_, i) =>
    request(p.url, 'POST', '/admin/v1/workspaces', {
      token: admin,
      body: { name: `inflight-${i}` },
    }),
  )
  // The server is handling them once the first is answered; then the signal comes.
  await Promise.race(writes)
  p.term()
  const answers = await Promise.allSettled(writes)
  const code = await p.exit
  t.equal(code, 0, 'exit code 0')
  t.equal(p.stderr().match(/shutdown failed/), null, 'no shutdown error')
  // A write the server had begun is answered 201; one whose bytes it had not read yet when
  // the signal came is refused 503 (retry elsewhere). On a loaded machine 15 ms does not
  // decide which, so the test holds the server to the rule, not to a count.
  const statuses = answers.map((a) => (a.status === 'fulfilled' ? a.value.status : 'no answer'))
  t.ok(
    statuses.every((c) => c === 201 || c === 503),
    `every in-flight write was answered, 201 or 503 (${statuses.join(' ')})`,
  )
  const created = writes.map((_, i) => `inflight-${i}`).filter((_, i) => statuses[i] === 201)
  const refused = await request(p.url, 'GET', '/healthz').then(
    () => false,
    () => true,
  )
  t.ok(refused, 'after exit nothing listens')

  const again = await start()
  t.teardown(() => {
    if (again.child.exitCode === null) again.child.kill('SIGKILL')
  })
  const list = await request(again.url, 'GET', '/admin/v1/workspaces', { token: admin })
  const names = list.body.data.map((w: any) => w.name).sort()
  t.same(names, created.sort(), 'every acknowledged workspace is there after a restart, no other')
  again.term()
  t.equal(await again.exit, 0)
})

t.test(
  'SIGTERM sent the instant the listening line appears still drains and exits 0',
  async (t) => {
    for (let i = 0; i < 2; i++) {
      const p = await start({ termOnListen: true })
      const code = await p.exit
      t.equal(code, 0, `run ${i + 1}: exit code 0, not killed by the signal`)
    }
  },
)
