// `npm start`: read the config once, start the app, stop it gracefully on SIGTERM/SIGINT.
import { startApp } from './app.js'
import { ConfigError, loadConfig } from './config/index.js'
import { configSecrets, redactor, redactUrlCredentials } from './observability/redact.js'
import { yieldEngineThreads } from './thread-priority.js'

// Until the config is read only URL credentials can be recognised; then its secrets too.
let redact = redactUrlCredentials
/** Last words on stderr, redacted: an uncaught error may quote a URL or a token. */
function die(prefix: string, err: unknown): never {
  const text = err instanceof Error ? (err.stack ?? err.message) : String(err)
  process.stderr.write(`meterflow: ${prefix}${redact(text)}\n`)
  process.exit(1)
}
process.on('uncaughtException', (err) => die('', err))
process.on('unhandledRejection', (err) => die('', err))

let config
try {
  config = loadConfig()
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`meterflow: ${err.message}\n`)
    process.exit(1)
  }
  die('', err)
}
redact = redactor(configSecrets(config))

let app
try {
  app = await startApp(config)
} catch (err) {
  die('could not start: ', err instanceof Error ? err.message : err)
}
// After the start: chDB's sessions and the decoder workers exist by now (later ones are
// found by the rescan).
yieldEngineThreads(config.ENGINE_THREAD_NICE)
let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return
    stopping = true
    // The drain answers everything within its deadline; this bounds the rest (a store that
    // hangs on close) so the process is gone before a supervisor's SIGKILL at 10 s.
    setTimeout(() => {
      process.stderr.write('meterflow: shutdown took over 9 s; exiting with writes unflushed\n')
      process.exit(1)
    }, 9_000).unref()
    app.close().then(
      () => process.exit(0),
      (err) => die('shutdown failed: ', err),
    )
  })
}

// Only now: a supervisor may send SIGTERM the moment it reads this line, and without the
// handlers above Node would die of the signal's default action instead of draining.
process.stdout.write(`listening on http://${config.HOST}:${app.port}\n`)
