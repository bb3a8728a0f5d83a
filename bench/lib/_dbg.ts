import { startServer, benchTenant } from './server.js'
import { bodyFactory } from './bodies.js'
const s = await startServer({ name: 'dbg' })
const t = await benchTenant(s)
const start = Date.now() - 100 * 86400e3
const f = bodyFactory({ kind: 'generic', batch: 1000, meters: 200, startMs: start, stepMs: 60000 })
for (let i = 0; i < 5; i++) {
  const t0 = performance.now()
  const r = await fetch(s.url + '/api/v1/reportData', { method: 'POST', headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' }, body: f.make(0, i) })
  const txt = await r.text()
  console.log(r.status, txt.slice(0, 80), Math.round(performance.now() - t0), 'ms')
}
console.log(await s.insertStats())
await s.stop()
