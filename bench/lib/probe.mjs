// Preloaded into the Meterflow server process by the bench (`--import`), never in production.
// Plain JavaScript because Piscina's worker threads inherit the preload too; it does nothing
// there. In the main thread it records every group-commit INSERT into `readings` (rows,
// duration), so the storage ceiling can be measured at the batch sizes the writer produced.
// On SIGUSR2 it writes what it saw since the last report to BENCH_PROBE_FILE and resets.
import fs from 'node:fs'
import { isMainThread } from 'node:worker_threads'

const file = process.env.BENCH_PROBE_FILE
const moduleUrl = process.env.BENCH_GROUP_COMMIT_MODULE
if (isMainThread && file && moduleUrl) {
  const { GroupCommit } = await import(moduleUrl)
  const fresh = () => ({ inserts: 0, rows: 0, ms: 0, maxRows: 0, sizes: [] })
  let seen = fresh()
  const original = GroupCommit.prototype.insert
  GroupCommit.prototype.insert = async function (batch) {
    const t = performance.now()
    await original.call(this, batch)
    if (this.table !== 'readings') return
    seen.inserts++
    seen.rows += batch.rows
    seen.ms += performance.now() - t
    if (batch.rows > seen.maxRows) seen.maxRows = batch.rows
    if (seen.sizes.length < 100_000) seen.sizes.push(batch.rows)
  }
  process.on('SIGUSR2', () => {
    fs.writeFileSync(file, JSON.stringify(seen))
    seen = fresh()
  })
}
