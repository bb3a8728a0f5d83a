// Quick probe: cost of one 1000-telegram batch in-thread (pack, worker handler, parse).
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { packTelegrams } from '../../src/decode/pool.js'
import { handleTelegrams } from '../../src/decode/worker.js'
import { readResults } from '../../src/decode/wire.js'

const vs = readFileSync(new URL('../../test/fixtures/wmbus/visible.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l))
const plain = vs.filter((v: any) => v.link.scheme === 'none' && v.register)
const jobs = Array.from({ length: 1000 }, (_, i) => ({
  hex: plain[i % plain.length].telegram,
  key: null,
}))
for (let r = 0; r < 5; r++) {
  const t0 = performance.now()
  const buf = packTelegrams(jobs)
  const t1 = performance.now()
  const s = handleTelegrams(buf)
  const t2 = performance.now()
  const o = readResults(s, jobs.length)
  const t3 = performance.now()
  console.log(
    `pack ${(t1 - t0).toFixed(2)} ms, decode ${(t2 - t1).toFixed(2)} ms, parse ${(t3 - t2).toFixed(2)} ms, ${s.byteLength} bytes, ${o.length}`,
  )
}
