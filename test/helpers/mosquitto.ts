// A real mosquitto broker for a test file, started on a free port with a password file
// (one user, anonymous access refused) and stopped at teardown. Where /usr/sbin/mosquitto is
// absent, MQTT tests are skipped with a visible notice (`.ci/run` installs mosquitto).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { canConnect, freePort } from './redis.js'

const BIN = fs.existsSync('/usr/sbin/mosquitto') ? '/usr/sbin/mosquitto' : 'mosquitto'

export function mosquittoAvailable(): boolean {
  return (
    spawnSync(BIN, ['-h'], { stdio: 'ignore' }).error === undefined &&
    spawnSync('mosquitto_passwd', ['-h'], { stdio: 'ignore' }).error === undefined
  )
}

export const MOSQUITTO_SKIP_NOTICE =
  'mosquitto not found: MQTT tests SKIPPED (apt-get install mosquitto; .ci/run does)'

export interface MosquittoHandle {
  /** mqtt://127.0.0.1:<port> without credentials. */
  url: string
  port: number
  username: string
  password: string
  stop(): Promise<void>
}

export async function startMosquitto(): Promise<MosquittoHandle> {
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-mqtt-'))
  const username = 'meterflow'
  const password = `pw-${Math.random().toString(36).slice(2)}`
  const pwfile = path.join(dir, 'passwd')
  fs.writeFileSync(pwfile, '')
  const pw = spawnSync('mosquitto_passwd', ['-b', pwfile, username, password])
  if (pw.status !== 0) throw new Error(`mosquitto_passwd failed: ${pw.stderr}`)
  // Started as root, mosquitto drops to its own user, which must read these (hashes only).
  fs.chmodSync(dir, 0o755)
  fs.chmodSync(pwfile, 0o644)
  const conf = path.join(dir, 'mosquitto.conf')
  fs.writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous false',
      `password_file ${pwfile}`,
      // Queue enough QoS 1 messages for an offline persistent session (the crash test).
      'max_queued_messages 100000',
      'persistence false',
      '',
    ].join('\n'),
  )
  const proc: ChildProcess = spawn(BIN, ['-c', conf], { stdio: 'ignore' })
  proc.unref()
  process.once('exit', () => proc.kill('SIGKILL'))
  for (let i = 0; ; i++) {
    if (await canConnect(port)) break
    if (i > 100 || proc.exitCode !== null) throw new Error('mosquitto did not start')
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    url: `mqtt://127.0.0.1:${port}`,
    port,
    username,
    password,
    async stop() {
      if (proc.exitCode === null)
        await new Promise<void>((r) => {
          proc.once('exit', () => r())
          proc.ref()
          proc.kill('SIGTERM')
        })
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Polls `f` until it gives a truthy value (MQTT delivery is asynchronous). No time is
 * asserted: the limit only stops a test that would otherwise hang; errors count as "not yet".
 */
export async function until<T>(
  what: string,
  f: () => Promise<T | undefined | false>,
  tries = 1200,
): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await f().catch(() => undefined)
    if (v) return v
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}
