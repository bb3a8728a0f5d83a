#!/usr/bin/env node
// `meterflow`: a client of the admin API (operator-api.md, "CLI"). Plain ESM JavaScript so
// it runs without a build. Every admin call is one entry of COMMANDS (commands.json, made
// from the routes' contracts); `call` reaches anything else, and `quickstart` sets up a first
// workspace, owner and token.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const SCOPES = ['data:report', 'data:read', 'masterdata:write']

/**
 * One entry per admin call: method, path, help line and options. Made from the admin routes'
 * contracts (their `cli` part, src/openapi/cli.ts) and committed as commands.json, so this
 * file runs without a build; test/cli/commands.test.ts fails when it falls behind them.
 * `path` placeholders `{x}` are filled from the option named `x`; every other option becomes
 * a body field (`field` when it is named otherwise), or a query parameter for GET.
 * Option types: string, int, int? (int or "null"), number?, bool, list (comma separated),
 * json (inline JSON or @file), string? (string or "null"), file (a path, or - for stdin).
 */
export const COMMANDS = JSON.parse(
  fs.readFileSync(new URL('./commands.json', import.meta.url), 'utf8'),
)

class CliError extends Error {
  constructor(message, body) {
    super(message)
    this.body = body
  }
}

// ---------------------------------------------------------------------------------------
// Arguments

/** `--a 1 --b=2 --flag pos1 pos2` → { opts: {a: '1', b: '2', flag: true}, positional } */
export function parseArgs(argv) {
  const opts = {}
  const positional = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--') {
      positional.push(...argv.slice(i + 1))
      break
    }
    if (a.startsWith('--') && a.length > 2) {
      const eq = a.indexOf('=')
      if (eq !== -1) opts[a.slice(2, eq)] = a.slice(eq + 1)
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) opts[a.slice(2)] = argv[++i]
      else opts[a.slice(2)] = true
    } else positional.push(a)
  }
  return { opts, positional }
}

function convert(name, type, raw) {
  const bad = (what) => new CliError(`--${name} must be ${what} (got ${JSON.stringify(raw)})`)
  const nullable = type.endsWith('?')
  const base = nullable ? type.slice(0, -1) : type
  if (base === 'bool') {
    if (raw === true || raw === 'true' || raw === '1' || raw === 'yes') return true
    if (raw === 'false' || raw === '0' || raw === 'no') return false
    throw bad('true or false')
  }
  if (raw === true) throw new CliError(`--${name} needs a value`)
  if (nullable && raw === 'null') return null
  switch (base) {
    case 'int':
      if (!/^-?\d+$/.test(raw)) throw bad('an integer')
      return Number(raw)
    case 'number':
      if (raw.trim() === '' || !Number.isFinite(Number(raw))) throw bad('a number')
      return Number(raw)
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    case 'json': {
      const text = raw.startsWith('@') ? fs.readFileSync(raw.slice(1), 'utf8') : raw
      try {
        return JSON.parse(text)
      } catch (e) {
        throw bad(`JSON or @file (${e.message})`)
      }
    }
    case 'file':
      return raw === '-' ? fs.readFileSync(0) : fs.readFileSync(raw)
    default:
      return raw
  }
}

/** Builds method, path, body/query for a table command from parsed options. */
export function buildRequest(name, cmd, opts) {
  const spec = cmd.options ?? {}
  for (const k of Object.keys(opts))
    if (!(k in spec) && k !== 'json')
      throw new CliError(`${name}: unknown option --${k} (see: meterflow help ${name})`)
  const values = {}
  for (const [k, o] of Object.entries(spec)) {
    if (opts[k] === undefined) {
      if (o.required)
        throw new CliError(`${name}: --${k} is required (see: meterflow help ${name})`)
      continue
    }
    values[k] = convert(k, o.type, opts[k])
  }
  let p = cmd.path
  const used = new Set()
  p = p.replace(/\{(\w+)\}/g, (_, k) => {
    used.add(k)
    return encodeURIComponent(String(values[k]))
  })
  let body
  let contentType = 'application/json'
  const fields = {}
  for (const [k, v] of Object.entries(values)) {
    if (used.has(k)) continue
    if (spec[k].type === 'file') {
      body = v
      contentType = 'application/x-ndjson'
      continue
    }
    fields[spec[k].field ?? k] = v
  }
  if (cmd.method === 'GET') {
    const q = new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, String(v)]))
    if ([...q].length) p += '?' + q
  } else if (body === undefined && (cmd.method !== 'DELETE' || Object.keys(fields).length))
    body = JSON.stringify(fields)
  return { method: cmd.method, path: p, body, contentType }
}

// ---------------------------------------------------------------------------------------
// Transport

function settings(env = process.env) {
  const url = (env.METERFLOW_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '')
  let token = env.ADMIN_TOKEN
  let tokenSource = 'ADMIN_TOKEN'
  if (!token) {
    const file = path.resolve(env.DATA_DIR || './data', 'admin-token')
    tokenSource = file
    try {
      token = fs.readFileSync(file, 'utf8').trim()
    } catch {
      token = null
    }
  }
  return { url, token, tokenSource }
}

async function adminCall(s, method, p, body, contentType = 'application/json') {
  if (!s.token)
    throw new CliError(
      `no admin token: set ADMIN_TOKEN, or DATA_DIR to the server's data directory ` +
        `(looked for ${s.tokenSource})`,
    )
  const full =
    p.startsWith('/admin/') || p.startsWith('/api/') || p === '/healthz' ? p : `/admin/v1${p}`
  const headers = { authorization: `Bearer ${s.token}` }
  if (body !== undefined) headers['content-type'] = contentType
  let res
  try {
    res = await fetch(s.url + full, { method, headers, body })
  } catch (err) {
    const code =
      err.cause?.code ?? err.cause?.errors?.[0]?.code ?? err.cause?.message ?? err.message
    throw new CliError(
      `cannot reach Meterflow at ${s.url} (${code}). Is it running (npm start)? ` +
        `Set METERFLOW_URL if it listens elsewhere.`,
    )
  }
  const text = await res.text()
  let parsed
  try {
    parsed = text ? JSON.parse(text) : null
  } catch {
    parsed = text
  }
  if (res.status === 401)
    throw new CliError(
      `the admin token was refused (401) by ${s.url}; it comes from ${s.tokenSource}. ` +
        `Set ADMIN_TOKEN to the server's admin token, or DATA_DIR to its data directory.`,
      parsed,
    )
  if (!res.ok) {
    let msg = `${method} ${full} failed with ${res.status}`
    if (parsed && typeof parsed === 'object' && parsed.message) msg += `: ${parsed.message}`
    if (parsed && typeof parsed === 'object' && parsed.errors)
      for (const [k, v] of Object.entries(parsed.errors))
        msg += `\n  ${k}: ${[].concat(v).join('; ')}`
    throw new CliError(msg, parsed)
  }
  return { status: res.status, body: parsed }
}

// ---------------------------------------------------------------------------------------
// Output

function scalar(v) {
  if (v === null || v === undefined) return '-'
  if (typeof v === 'object') return JSON.stringify(v)
  return String(v)
}

/** Human-readable: objects as aligned key/value lines, arrays of objects as a table. */
export function human(value) {
  const v =
    value && typeof value === 'object' && 'data' in value && Object.keys(value).length === 1
      ? value.data
      : value
  if (Array.isArray(v)) {
    if (v.length === 0) return '(none)'
    if (v.every((r) => r && typeof r === 'object' && !Array.isArray(r))) {
      const cols = [...new Set(v.flatMap((r) => Object.keys(r)))]
      const rows = v.map((r) => cols.map((c) => scalar(r[c])))
      const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i].length)))
      const line = (cells) =>
        cells
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd()
      return [line(cols), ...rows.map(line)].join('\n')
    }
    return v.map(scalar).join('\n')
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v)
    const w = Math.max(0, ...keys.map((k) => k.length))
    return keys.map((k) => `${k.padEnd(w)}  ${scalar(v[k])}`).join('\n')
  }
  return scalar(v)
}

function print(value, asJson) {
  process.stdout.write((asJson ? JSON.stringify(value, null, 2) : human(value)) + '\n')
}

// ---------------------------------------------------------------------------------------
// Commands beyond the table

const shellQuote = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`

async function quickstart(s, opts) {
  const name = typeof opts.name === 'string' ? opts.name : 'Quickstart'
  const email = typeof opts.email === 'string' ? opts.email : 'owner@example.com'
  const ws = (await adminCall(s, 'POST', '/workspaces', JSON.stringify({ name }))).body.data
  const user = (
    await adminCall(
      s,
      'POST',
      `/workspaces/${ws.id}/users`,
      JSON.stringify({ email, owner: true, permissions: ['groups.manage'] }),
    )
  ).body.data
  const token = (
    await adminCall(
      s,
      'POST',
      `/workspaces/${ws.id}/tokens`,
      JSON.stringify({ user_id: user.id, name: 'quickstart', scopes: SCOPES }),
    )
  ).body.data
  const body = JSON.stringify({
    readings: [
      {
        meter: 'demo-1',
        kind: 'saldo',
        value: 1.5,
        unit: 'kwh',
        recorded_at: new Date().toISOString(),
      },
    ],
  })
  const auth = `-H ${shellQuote(`Authorization: Bearer ${token.token}`)}`
  const report =
    `curl -sS -X POST ${s.url}/api/v1/reportData ${auth} ` +
    `-H 'Content-Type: application/json' -d ${shellQuote(body)}`
  const ping = `curl -sS ${s.url}/api/v1/ping ${auth}`
  const result = { workspace: ws, user, token, curl: { report, ping } }
  if (opts.json) return print(result, true)
  process.stdout.write(
    [
      `Workspace ${ws.id} "${ws.name}", owner user ${user.id} <${user.email}> with groups.manage.`,
      `API token ${token.id} (scopes ${token.scopes.join(', ')}; shown only now, keep it):`,
      '',
      `  ${token.token}`,
      '',
      'Report a first reading:',
      '',
      `  ${report}`,
      '',
      'Check the service:',
      '',
      `  ${ping}`,
      '',
    ].join('\n'),
  )
}

async function call(s, positional, opts) {
  const [method, p, body] = positional
  if (!method || !p) throw new CliError('usage: meterflow call METHOD PATH [JSON]')
  if (body !== undefined) {
    try {
      JSON.parse(body)
    } catch (e) {
      throw new CliError(`call: the body is not JSON (${e.message})`)
    }
  }
  const r = await adminCall(s, method.toUpperCase(), p, body)
  print(r.body ?? { status: r.status }, Boolean(opts.json))
}

/** `decode HEX [--key K]`: the telegram (separators _ | # and blanks dropped) and the key. */
function decodeArgs(positional, opts) {
  const telegram = positional.join('').replace(/[\s_|#]/g, '')
  if (!/^[0-9a-fA-F]+$/.test(telegram) || telegram.length % 2)
    throw new CliError('decode: the telegram must be an even number of hex digits')
  const key = typeof opts.key === 'string' ? opts.key : null
  if (key !== null && !/^([0-9a-fA-F]{32}|[0-9a-fA-F]{16})$/.test(key))
    throw new CliError('decode: --key must be 32 hex digits (or 16 for a DES key)')
  return { telegram, key }
}

function help(topic) {
  const cmd = topic && COMMANDS[topic]
  if (cmd) {
    const lines = [`meterflow ${topic}  —  ${cmd.summary}`, `  ${cmd.method} /admin/v1${cmd.path}`]
    for (const [k, o] of Object.entries(cmd.options ?? {}))
      lines.push(`  --${k} <${o.type}>${o.required ? '  (required)' : ''}`)
    return lines.join('\n') + '\n'
  }
  const w = Math.max(...Object.keys(COMMANDS).map((k) => k.length))
  return [
    'meterflow — client of the Meterflow admin API',
    '',
    'Usage: meterflow <command> [--option value ...] [--json]',
    '',
    'Environment: METERFLOW_URL (default http://127.0.0.1:8080); ADMIN_TOKEN, or the file',
    '             DATA_DIR/admin-token (DATA_DIR default ./data).',
    '',
    'Commands:',
    `  ${'quickstart'.padEnd(w)}  Workspace, owner with groups.manage, all-scope token, curl lines.`,
    ...Object.entries(COMMANDS).map(([k, c]) => `  ${k.padEnd(w)}  ${c.summary}`),
    `  ${'call METHOD PATH [JSON]'.padEnd(w)}  Any admin call, e.g. call GET /workspaces/1`,
    `  ${'clickhouse-server'.padEnd(w)}  Run a ClickHouse HTTP server from the bundled engine.`,
    `  ${'decode HEX [--key K]'.padEnd(w)}  Analyze a wM-Bus telegram locally (--remote: POST /decode).`,
    `  ${'help [command]'.padEnd(w)}  This text, or one command's options.`,
    '',
  ].join('\n')
}

export async function main(argv = process.argv.slice(2), env = process.env) {
  const [name, ...rest] = argv
  const { opts, positional } = parseArgs(rest)
  const asJson = Boolean(opts.json)
  try {
    if (
      name === 'clickhouse-server' ||
      (name === 'help' && positional[0] === 'clickhouse-server')
    ) {
      // Runs a server rather than calling one; compiled with the service (npm run build).
      const { runClickHouseServer } = await import('../dist/clickhouse-server/main.js')
      return await runClickHouseServer(name === 'help' ? ['--help'] : rest)
    }
    if (!name || name === 'help' || name === '--help' || name === '-h' || opts.help) {
      process.stdout.write(help(name === 'help' ? positional[0] : name))
      return 0
    }
    if (name === 'decode' && !opts.remote) {
      // The telegram analyzer runs here, on the service's WASM decoder (npm run build)
      const { analyzeTelegram } = await import('../dist/decode/analyze.js')
      const { formatAnalysis } = await import('../dist/decode/analysis-text.js')
      const a = analyzeTelegram(
        decodeArgs(positional, opts).telegram,
        decodeArgs(positional, opts).key,
      )
      process.stdout.write((asJson ? JSON.stringify(a, null, 2) : formatAnalysis(a)) + '\n')
      return a.status === 'ok' ? 0 : 2
    }
    const s = settings(env)
    if (name === 'quickstart') await quickstart(s, opts)
    else if (name === 'decode') {
      const r = await adminCall(s, 'POST', '/decode', JSON.stringify(decodeArgs(positional, opts)))
      print(r.body, true)
    } else if (name === 'call') await call(s, positional, opts)
    else {
      const cmd = COMMANDS[name]
      if (!cmd) throw new CliError(`unknown command ${name} (see: meterflow help)`)
      if (positional.length) throw new CliError(`${name}: unexpected argument ${positional[0]}`)
      const req = buildRequest(name, cmd, opts)
      const r = await adminCall(s, req.method, req.path, req.body, req.contentType)
      print(r.body ?? { status: r.status }, asJson)
    }
    return 0
  } catch (err) {
    if (!(err instanceof CliError)) throw err
    if (asJson && err.body && typeof err.body === 'object')
      process.stderr.write(JSON.stringify(err.body) + '\n')
    process.stderr.write(`meterflow: ${err.message}\n`)
    return 1
  }
}

// Run when executed (also through the npm bin symlink), not when imported by a test.
const realpath = (p) => {
  try {
    return fs.realpathSync(p)
  } catch {
    return p
  }
}
const self = realpath(fileURLToPath(import.meta.url))
const invoked = process.argv[1] ? realpath(path.resolve(process.argv[1])) : ''
if (self === invoked) process.exitCode = await main()
