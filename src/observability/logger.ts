// The service's logger: pino JSON lines on stdout, each line passed through the redactor
// first, so no code path (an error message quoting a URL, a driver's stack) can log a secret.
import { pino, type Logger } from 'pino'
import type { Config } from '../config/index.js'
import { configSecrets, redactor } from './redact.js'

export interface LineSink {
  write(line: string): unknown
}

export function createLogger(config: Readonly<Config>, sink: LineSink = process.stdout): Logger {
  const redact = redactor(configSecrets(config))
  return pino(
    { level: config.LOG_LEVEL, redact: ['req.headers.authorization'] },
    { write: (line: string) => sink.write(redact(line)) },
  )
}
