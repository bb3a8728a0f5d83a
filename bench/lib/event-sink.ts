// First contact is measured with `meter.created` subscribed (a CRM kept in sync is the
// workload, not a bare one): a subscriber that answers 204 at once and counts what it got,
// and, after a row, the wait until its deliveries have drained, so the next row starts with
// no backlog and pays for its own events only.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BenchServer } from './server.js'
import { round } from './report.js'

export interface EventSink {
  url: string
  received(): number
  close(): void
}

export async function eventSink(): Promise<EventSink> {
  let n = 0
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      n++
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/events`,
    received: () => n,
    close: () => server.close(),
  }
}

/** Waits until the sink has received nothing for a second (at most two minutes). */
async function drain(sink: EventSink): Promise<{ received: number; ms: number }> {
  const t0 = performance.now()
  let last = sink.received()
  let quietSince = performance.now()
  while (performance.now() - quietSince < 1000 && performance.now() - t0 < 120_000) {
    await new Promise((r) => setTimeout(r, 100))
    const n = sink.received()
    if (n !== last) [last, quietSince] = [n, performance.now()]
  }
  return { received: last, ms: quietSince - t0 }
}

/**
 * Drains the deliveries a row left behind and says what they cost: events received by the
 * row's end and in all, the rate while draining and the server's CPU per event then.
 */
export async function drainAfterRow(
  server: BenchServer,
  sink: EventSink,
  label: string,
): Promise<string> {
  const atEnd = sink.received()
  const cpu0 = server.threadCpuMs()
  const d = await drain(sink)
  const drained = d.received - atEnd
  const cpu1 = server.threadCpuMs()
  const per = (ms: number) => round(ms / drained, 3)
  const perEvent =
    drained > 0
      ? `, server CPU ${per(cpu1.total - cpu0.total)} ms per event: main thread ${per(cpu1.main - cpu0.main)}, merges ${per(cpu1.merges - cpu0.merges)}`
      : ''
  return `${label}: ${atEnd} meter.created received by the end of the run, ${d.received} in all after ${round(d.ms)} ms more (${round(drained / (d.ms / 1000))} events/s while draining${perEvent})`
}
