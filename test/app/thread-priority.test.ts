// The engine's threads yield the cores to the event loop's (src/thread-priority.ts): in this
// process with named worker threads started before and after and an unnamed one (as Node's
// own threads are), and in the real service process through ENGINE_THREAD_NICE. Linux only
// (/proc/self/task).
import fs from 'node:fs'
import os from 'node:os'
import { Worker } from 'node:worker_threads'
import t from 'tap'
import { yieldEngineThreads } from '../../src/thread-priority.js'
import { startProc } from '../helpers/proc.js'
import { tmpDataDir } from '../helpers/server.js'

interface TestWorker {
  tid: number
  stop(): Promise<number>
}

/** A worker that names its thread (`name`, or keeps Node's name), reports its id, then waits. */
async function worker(name = 'mf-test'): Promise<TestWorker> {
  const w = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const fs = require('node:fs');
     if (workerData) fs.writeFileSync('/proc/thread-self/comm', workerData);
     parentPort.postMessage(Number(fs.readlinkSync('/proc/thread-self').split('/').pop()));
     setInterval(() => {}, 1000);`,
    { eval: true, workerData: name },
  )
  const tid = await new Promise<number>((r) => w.once('message', r))
  return { tid, stop: () => w.terminate() }
}

const commOf = (pid: number, tid: number) =>
  fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'latin1').trim()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

if (!fs.existsSync('/proc/self/task')) {
  t.comment('SKIP: no /proc/self/task (not Linux): thread priorities are not set here')
  t.pass('skipped')
} else {
  t.test('named threads, before and after, get the nice value; Node’s own do not', async (t) => {
    const before = await worker()
    const unnamed = await worker('')
    const mainNice = os.getPriority(process.pid)
    const stop = yieldEngineThreads(7)
    t.teardown(stop)
    t.equal(os.getPriority(before.tid), 7, 'a named thread that was running')
    t.equal(os.getPriority(process.pid), mainNice, 'the main thread untouched')
    t.equal(os.getPriority(unnamed.tid), 0, 'a thread named as the main thread untouched')
    const after = await worker()
    t.equal(os.getPriority(after.tid), 0, 'a new thread starts at its creator’s value')
    await sleep(1_300)
    t.equal(os.getPriority(after.tid), 7, 'found by the rescan')
    os.setPriority(before.tid, 12)
    await sleep(1_300)
    t.equal(os.getPriority(before.tid), 12, 'a higher value set by someone else is never lowered')
    if (process.getuid?.() === 0) {
      // Only with privilege: a thread set ahead of the main thread stays ahead.
      os.setPriority(after.tid, -3)
      await sleep(1_300)
      t.equal(os.getPriority(after.tid), -3, 'a thread ahead of the main thread is left there')
    }
    for (const w of [before, unnamed, after]) await w.stop()
  })

  t.test('0 leaves every thread as it is', async (t) => {
    const w = await worker()
    yieldEngineThreads(0)()
    t.equal(os.getPriority(w.tid), 0)
    await w.stop()
  })

  t.test('the service: ENGINE_THREAD_NICE for chDB’s and the decoders’ threads', async (t) => {
    const dataDir = tmpDataDir()
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))
    for (const value of ['5', '0']) {
      const proc = await startProc({ DATA_DIR: dataDir, ENGINE_THREAD_NICE: value })
      try {
        const pid = proc.child.pid!
        const nodeName = commOf(pid, pid)
        const look = () => {
          const threads: { tid: number; comm: string; nice: number }[] = []
          for (const tid of fs.readdirSync(`/proc/${pid}/task`).map(Number))
            try {
              threads.push({ tid, comm: commOf(pid, tid), nice: os.getPriority(tid) })
            } catch {
              // ended meanwhile
            }
          return {
            engine: threads.filter((x) => x.comm !== nodeName),
            own: threads.filter((x) => x.comm === nodeName),
          }
        }
        // The decoder workers name themselves once loaded; a rescan (every second) finds
        // them. On a loaded machine that can take a few of them: wait up to 10 s.
        await sleep(1_500)
        let seen = look()
        for (let i = 0; i < 34; i++) {
          const decoders = seen.engine.filter((x) => x.comm === 'mf-decoder')
          if (decoders.length && decoders.every((x) => x.nice === Number(value))) break
          await sleep(250)
          seen = look()
        }
        const { engine, own } = seen
        t.ok(
          engine.some((x) => x.comm === 'mf-decoder'),
          `a decoder worker among the ${engine.length} engine threads`,
        )
        // chDB runs its memory tracker at -20 where it may (as root): ahead of the main
        // thread, left there.
        t.same(
          engine.filter((x) => x.nice >= 0 && x.nice !== Number(value)),
          [],
          `ENGINE_THREAD_NICE=${value}: the engine's threads at ${value}`,
        )
        t.same(
          own.filter((x) => x.nice !== 0),
          [],
          `Node's own threads (${own.length}, the main one among them) at 0`,
        )
      } finally {
        await proc.kill('SIGTERM')
      }
    }
  })
}
