// Ceiling servers run as their own process (tsx) and announce `listening on http://HOST:PORT`
// on stdout; this starts one and waits for its port. Also the body reader they share.
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import type { HttpResponse } from 'uWebSockets.js'
import { ROOT } from './server.js'

export async function startChildServer(
  script: string,
  args: string[] = [],
): Promise<{ child: ChildProcess; port: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out)
      if (m) resolve(Number(m[1]))
    })
    child.once('exit', (c) => reject(new Error(`${script} exited ${c}`)))
  })
  return {
    child,
    port,
    stop: () =>
      new Promise<void>((r) => {
        if (child.exitCode !== null) return r()
        child.once('exit', () => r())
        child.kill('SIGTERM')
      }),
  }
}

/** Reads a uWS request body into one buffer (as src/http/server.ts does); `aborted()` tells whether the client left. */
export function readBody(
  res: HttpResponse,
  done: (body: Buffer, aborted: () => boolean) => void,
): void {
  let aborted = false
  res.onAborted(() => {
    aborted = true
  })
  const chunks: Buffer[] = []
  res.onData((ab, last) => {
    chunks.push(Buffer.from(ab.slice(0)))
    if (!last) return
    done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), () => aborted)
  })
}
