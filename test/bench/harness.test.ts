// Runs the bench harness end to end on its tiniest scenario (a fresh server process, the
// load generator process, a 1 s + 3 s closed-loop run and a short open-loop run of
// 1,000-reading batches), so `npm run bench` cannot rot. Checks the machine-readable report,
// not the figures (shared machines are noisy).
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'

const root = fileURLToPath(new URL('../../', import.meta.url))
const run = promisify(execFile)

/**
 * `npm run bench -- --tiny --scenario <scenario> --json …` as its own process, without the
 * test run's Redis or ClickHouse server (a scenario that needs them starts its own): its
 * output and the report it wrote.
 */
async function tinyBench(
  t: Test,
  scenario: string,
  timeoutMs: number,
): Promise<{ stdout: string; report: any }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-bench-test-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const json = path.join(dir, 'out.json')
  const env = { ...process.env }
  delete env.REDIS_URL
  delete env.CLICKHOUSE_URL
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(root, 'bench/run.ts'),
      '--tiny',
      '--scenario',
      scenario,
      '--json',
      json,
    ],
    { cwd: root, env, timeout: timeoutMs, maxBuffer: 1 << 24 },
  )
  return { stdout, report: JSON.parse(fs.readFileSync(json, 'utf8')) }
}

t.test('npm run bench -- --tiny --scenario generic writes a report with figures', async (t) => {
  const { stdout, report } = await tinyBench(t, 'generic', 120_000)
  t.match(stdout, /generic\s+batch 1000, closed c=4/)
  t.equal(report.mode, 'tiny')
  t.ok(report.machine.cores >= 1)
  const generic = report.scenarios.find((s: { name: string }) => s.name === 'generic')
  t.ok(generic, 'generic scenario present')
  t.notMatch(generic.notes.join('\n'), /FAILED/)
  const closed = generic.rows.find((r: { label: string }) => r.label === 'batch 1000, closed c=4')
  t.ok(closed.rate > 0, `readings/s measured (${closed.rate})`)
  t.ok(
    closed.p50 > 0 && closed.p99 >= closed.p50 && closed.p999 >= closed.p99,
    'latency percentiles ordered',
  )
  t.ok(closed.cpuMsPer1k > 0, 'server CPU per 1,000 readings')
  t.ok(closed.peakRssMiB > 0, 'peak RSS')
  if (fs.existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`))
    t.ok(
      closed.detail.mainWaitPct >= 0 && closed.detail.mainWaitPct <= 100,
      `the main thread's wait for a core, a share of the window (${closed.detail.mainWaitPct} %)`,
    )
  t.equal(closed.detail.statuses['201'] > 0, true, 'answered 201 Created')
  t.ok(closed.detail.insertMeanRows > 0, 'group-commit insert sizes observed')
  t.ok(
    generic.rows.some((r: { label: string }) => /open 50 %/.test(r.label)),
    'open-loop run at half the max',
  )
})

t.test(
  'npm run bench -- --tiny --scenario scaleout: two instances of one deployment, each answering',
  async (t) => {
    const { redisAvailable, REDIS_SKIP_NOTICE } = await import('../helpers/redis.js')
    if (!redisAvailable()) {
      t.comment(REDIS_SKIP_NOTICE)
      return t.pass('skipped', { skip: REDIS_SKIP_NOTICE })
    }
    const { report } = await tinyBench(t, 'scaleout', 240_000)
    const s = report.scenarios.find((x: { name: string }) => x.name === 'scaleout')
    t.notMatch(s.notes.join('\n'), /FAILED|SKIPPED|answered duplicate/)
    const two = s.rows.filter((r: { detail: { instances: number } }) => r.detail.instances === 2)
    t.equal(two.length, 3, 'gateway, shared and late rows on two instances')
    for (const r of two) {
      t.ok(r.rate > 0 && r.ratio > 0, `${r.label}: ${r.rate} readings/s, ratio ${r.ratio}`)
      t.same(Object.keys(r.detail.statuses), ['201'], `${r.label}: every request answered 201`)
    }
  },
)
