// Spawns the real service (`node --import tsx src/main.ts`) as a child process. An env value
// of undefined removes the variable (e.g. WORKERS: undefined keeps the service's default).
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '../..')

export interface Proc {
  child: ChildProcess
  url: string
  exit: Promise<number | null>
  /** What the child wrote to stderr so far. */
  stderr(): string
  kill(signal?: NodeJS.Signals): Promise<void>
}

export async function startProc(env: Record<string, string | undefined>): Promise<Proc> {
  const merged: Record<string, string | undefined> = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: '0',
    SCHEDULER: 'off',
    LOG_LEVEL: 'warn',
    WORKERS: '1',
    REDIS_URL: '',
    CLICKHOUSE_URL: '',
    ...env,
  }
  for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k]
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const exit = new Promise<number | null>((r) => child.on('exit', (c) => r(c)))
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(out)
      if (m) resolve(m[1]!)
    })
    void exit.then((c) => reject(new Error(`exited ${c} before listening: ${stderr}`)))
  })
  return {
    child,
    url,
    exit,
    stderr: () => stderr,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill(signal)
      await exit
    },
  }
}
