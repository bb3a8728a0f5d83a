// `npm start`: read the config once, start the app, stop it gracefully on SIGTERM/SIGINT.
import { startApp } from './app.js'
import { ConfigError, loadConfig } from './config/index.js'

let config
try {
  config = loadConfig()
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`meterflow: ${err.message}\n`)
    process.exit(1)
  }
  throw err
}

const app = await startApp(config)
let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return
    stopping = true
    app.close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`meterflow: shutdown failed: ${err}\n`)
        process.exit(1)
      },
    )
  })
}

// Only now: a supervisor may send SIGTERM the moment it reads this line, and without the
// handlers above Node would die of the signal's default action instead of draining.
process.stdout.write(`listening on http://${config.HOST}:${app.port}\n`)
