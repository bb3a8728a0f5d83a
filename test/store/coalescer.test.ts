// The per-tick batching of the store's look-ups: one fetch per workspace and tick, and with
// `serial`, the calls made while a workspace's fetch runs share the next one.
import t from 'tap'
import { Coalescer } from '../../src/store/coalescer.js'

/** A fetch that records its calls and answers when `release` is called. */
function gatedFetch() {
  const calls: { ws: number; reqs: number[] }[] = []
  const gates: (() => void)[] = []
  const fetch = (ws: number, reqs: number[]) => {
    calls.push({ ws, reqs })
    return new Promise<number[]>((resolve) => gates.push(() => resolve(reqs.map((r) => r * 10))))
  }
  return { calls, fetch, release: () => gates.shift()!() }
}
const tick = () => new Promise((r) => setImmediate(r))

t.test(
  'the calls of one tick are one fetch per workspace, each answered its own part',
  async (t) => {
    const g = gatedFetch()
    const c = new Coalescer(g.fetch)
    const answers = Promise.all([c.ask(1, 1), c.ask(1, 2), c.ask(2, 3)])
    await tick()
    t.same(g.calls, [
      { ws: 1, reqs: [1, 2] },
      { ws: 2, reqs: [3] },
    ])
    g.release()
    g.release()
    t.same(await answers, [10, 20, 30])
  },
)

t.test('without serial, a later tick fetches while the first still runs', async (t) => {
  const g = gatedFetch()
  const c = new Coalescer(g.fetch)
  const a = c.ask(1, 1)
  await tick()
  const b = c.ask(1, 2)
  await tick()
  t.equal(g.calls.length, 2)
  g.release()
  g.release()
  t.same(await Promise.all([a, b]), [10, 20])
})

t.test('serial: calls made while the fetch runs share one fetch after it', async (t) => {
  const g = gatedFetch()
  const c = new Coalescer(g.fetch, true)
  const first = c.ask(1, 1)
  await tick()
  const later = [c.ask(1, 2)]
  await tick()
  later.push(c.ask(1, 3), c.ask(2, 4))
  await tick()
  t.same(
    g.calls,
    [
      { ws: 1, reqs: [1] },
      { ws: 2, reqs: [4] },
    ],
    'workspace 1 waits for its running fetch; workspace 2 does not',
  )
  g.release()
  t.equal(await first, 10)
  await tick()
  t.same(g.calls[2], { ws: 1, reqs: [2, 3] }, 'the waiting calls in one fetch')
  g.release()
  g.release()
  t.same(await Promise.all([...later]), [20, 30, 40])
})

t.test('serial: a failed fetch fails its callers and lets the next one go', async (t) => {
  let n = 0
  const c = new Coalescer<number, number>(async (_ws, reqs) => {
    if (n++ === 0) throw new Error('boom')
    return reqs
  }, true)
  await t.rejects(c.ask(1, 1), /boom/)
  t.equal(await c.ask(1, 2), 2)
})
