// Runs the `meterflow` CLI (bin/meterflow.js) as a child process against a test server.
import { spawn } from 'node:child_process'
import path from 'node:path'
import type { TestServer } from './server.js'

const root = path.resolve(import.meta.dirname, '../..')

export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
}

export function runCli(
  s: Pick<TestServer, 'url' | 'adminToken'>,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const child = spawn(process.execPath, ['bin/meterflow.js', ...args], {
    cwd: root,
    env: {
      ...process.env,
      METERFLOW_URL: s.url,
      ADMIN_TOKEN: s.adminToken,
      DATA_DIR: '/nonexistent',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  return new Promise((r) => child.on('exit', (code) => r({ code, stdout, stderr })))
}
