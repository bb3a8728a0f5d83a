// Summarises a V8 .cpuprofile written by `npm run bench -- --profile`: self time by function
// and by file, optionally only over the last N seconds of the profile (the measured runs,
// not start-up and the provisioning pass), and without its final M seconds (a measured
// window followed by a drain: the provision row's `meter.created` backlog).
//   node --import tsx bench/lib/profile-summary.ts FILE.cpuprofile [--last SECONDS]
//     [--skip-last SECONDS] [--top N]
import fs from 'node:fs'

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

export function summarise(file: string, lastS = Infinity, top = 25, skipLastS = 0): string {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const times: number[] = []
  let t = p.startTime
  for (const d of p.timeDeltas) times.push((t += d))
  const to = p.endTime - skipLastS * 1e6
  const from = to - lastS * 1e6
  const self = new Map<string, number>()
  const files = new Map<string, number>()
  const incl = new Map<string, number>()
  let total = 0
  let idle = 0
  const short = (u: string) => u.replace(/^file:\/\/\/.*?\/(src|dist|bench|node_modules)\//, '$1/')
  for (let i = 0; i < p.samples.length; i++) {
    if (times[i]! < from || times[i]! > to) continue
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000
    const n = byId.get(p.samples[i]!)!
    const name = n.callFrame.functionName || '(anonymous)'
    if (name === '(idle)' || (name === '(program)' && false)) {
      idle += dt
      continue
    }
    total += dt
    const key = `${name} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + dt)
    const f = short(n.callFrame.url) || `(${name})`
    files.set(f, (files.get(f) ?? 0) + dt)
    // Inclusive: every distinct frame on the stack once.
    const seen = new Set<string>()
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      const c = byId.get(id)!.callFrame
      const k = `${c.functionName || '(anonymous)'} ${short(c.url)}:${c.lineNumber + 1}`
      if (seen.has(k)) continue
      seen.add(k)
      incl.set(k, (incl.get(k) ?? 0) + dt)
    }
  }
  const pct = (x: number) => ((x / total) * 100).toFixed(1).padStart(5) + ' %'
  const list = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${pct(v)}  ${v.toFixed(0).padStart(7)} ms  ${k}`)
      .join('\n')
  return [
    `${file}: ${total.toFixed(0)} ms on CPU (idle ${idle.toFixed(0)} ms)${Number.isFinite(lastS) ? `, last ${lastS} s` : ''}${skipLastS ? ` before the final ${skipLastS} s` : ''}`,
    '\nself time by function:',
    list(self, top),
    '\nself time by file:',
    list(files, top),
    '\ninclusive time (src/ or dist/ only):',
    list(new Map([...incl].filter(([k]) => k.includes(' src/') || k.includes(' dist/'))), top),
  ].join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const a = process.argv.slice(2)
  const last = a.includes('--last') ? Number(a[a.indexOf('--last') + 1]) : Infinity
  const top = a.includes('--top') ? Number(a[a.indexOf('--top') + 1]) : 25
  const skip = a.includes('--skip-last') ? Number(a[a.indexOf('--skip-last') + 1]) : 0
  console.log(summarise(a[0]!, last, top, skip))
}
