// Secrets never reach a log line or stderr: credentials in any URL (`scheme://user:pass@`)
// are masked, and so are the configured secret values wherever they occur (a token quoted
// in an error message, a password repeated by a driver).
import type { Config } from '../config/index.js'

const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@"'<>]+@/gi

/** Masks the user-info part of every URL in `text`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, '$1***@')
}

/** The secret values of a config: tokens and the passwords of its URLs. */
export function configSecrets(
  config: Partial<
    Pick<Config, 'ADMIN_TOKEN' | 'METRICS_TOKEN' | 'REDIS_URL' | 'CLICKHOUSE_URL' | 'SMTP_URL'>
  >,
): string[] {
  const out: string[] = []
  if (config.ADMIN_TOKEN) out.push(config.ADMIN_TOKEN)
  if (config.METRICS_TOKEN) out.push(config.METRICS_TOKEN)
  for (const url of [config.REDIS_URL, config.CLICKHOUSE_URL, config.SMTP_URL]) {
    if (!url) continue
    try {
      const u = new URL(url)
      // Short values would mask ordinary words; URL masking still covers them in URLs.
      for (const part of [u.password, decodeURIComponent(u.password)])
        if (part.length >= 4) out.push(part)
    } catch {
      // Not a URL: the config refused it already.
    }
  }
  return [...new Set(out)].sort((a, b) => b.length - a.length)
}

/** A function that masks URL credentials and every one of `secrets` in a text. */
export function redactor(secrets: readonly string[]): (text: string) => string {
  return (text) => {
    let out = redactUrlCredentials(text)
    for (const s of secrets) if (out.includes(s)) out = out.split(s).join('***')
    return out
  }
}
