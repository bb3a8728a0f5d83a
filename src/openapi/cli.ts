// The `meterflow` CLI's command table (bin/commands.json), made from the contracts of the admin
// routes that name a command (`cli`): the path parameter, then the body fields (query fields
// for a GET) in schema order, kebab-cased, typed and required as their schemas say. The CLI
// runs without a build, so the table is committed; test/cli/commands.test.ts keeps it equal
// to this (`npx tap --snapshot test/cli/commands.test.ts` writes it anew).
import type { CliCommand, RouteContract } from '../http/contract.js'
import type { ListedRoute } from '../http/router.js'

/** Option types as bin/meterflow.js converts them; `?` also takes "null". */
export interface CliOption {
  type: string
  required?: true
  field?: string
}

export interface CliCommandEntry {
  method: string
  path: string
  summary: string
  options?: Record<string, CliOption>
}

interface Json {
  type?: string
  anyOf?: Json[]
  const?: unknown
  properties?: Record<string, Json>
  required?: string[]
}

const PREFIX = '/admin/v1'

/** How the command line's text for a field becomes its JSON value. */
export function cliType(schema: Json): string {
  if (schema.anyOf) {
    const rest = schema.anyOf.filter((s) => s.type !== 'null')
    const base = rest.every((s) => s.const !== undefined)
      ? rest.every((s) => typeof s.const === 'number')
        ? 'int'
        : 'string'
      : rest.length === 1
        ? cliType(rest[0]!)
        : 'json'
    // Anything-or-null is still just JSON (`null` is JSON).
    return base !== 'json' && rest.length < schema.anyOf.length ? `${base}?` : base
  }
  if (schema.const !== undefined) return typeof schema.const === 'number' ? 'int' : 'string'
  const types: Record<string, string> = {
    integer: 'int',
    number: 'number',
    string: 'string',
    boolean: 'bool',
    array: 'list',
  }
  return types[schema.type ?? ''] ?? 'json'
}

const kebab = (field: string) => field.replace(/_/g, '-')
const plain = (s: unknown): Json => JSON.parse(JSON.stringify(s)) as Json

/** Every field the route takes, by name: its schema and whether it is required. */
function fieldsOf(c: RouteContract): Map<string, { schema: Json; required: boolean }> {
  const out = new Map<string, { schema: Json; required: boolean }>()
  if (c.method === 'GET') {
    for (const q of c.query ?? []) out.set(q.name, { schema: plain(q.schema), required: false })
    return out
  }
  const body = c.body ? plain(c.body) : {}
  const required = new Set(body.required ?? [])
  for (const [name, schema] of Object.entries(body.properties ?? {}))
    out.set(name, { schema, required: required.has(name) })
  return out
}

/** The option of a path parameter and its type: `ws` is --workspace, ids are integers. */
function paramOption(param: string, cli: CliCommand): [string, string] {
  const [name, type] = (cli.param ?? (param === 'ws' ? 'workspace' : param)).split(':')
  return [name!, type ?? 'int']
}

function options(route: string, c: RouteContract, cli: CliCommand): Record<string, CliOption> {
  const opts: Record<string, CliOption> = {}
  const params = [...c.path.matchAll(/:(\w+)/g)].map((m) => m[1]!)
  if (cli.param && params.length !== 1) throw new Error(`${route}: param needs one path parameter`)
  for (const p of params) {
    const [name, type] = paramOption(p, cli)
    opts[name] = { type, required: true }
  }
  // A body that is not JSON (NDJSON imports) is read from a file, or stdin for `-`.
  if (c.bodyMediaType && c.bodyMediaType !== 'application/json') {
    opts.file = { type: 'file', required: true }
    return opts
  }
  const fields = fieldsOf(c)
  for (const spec of cli.fields ?? [...fields.keys()]) {
    const m = /^(?:([\w-]+)=)?(\w+)(?::([\w?]+))?$/.exec(spec)
    const f = m && fields.get(m[2]!)
    if (!m || !f) throw new Error(`${route}: cli field ${spec} is not a field of the route`)
    const option = m[1] ?? kebab(m[2]!)
    opts[option] = {
      type: m[3] ?? cliType(f.schema),
      ...(f.required ? { required: true as const } : {}),
      ...(option !== m[2] ? { field: m[2]! } : {}),
    }
  }
  return opts
}

/** The command table of the routes whose contract names a CLI command, in route order. */
export function cliCommands(routes: ListedRoute[]): Record<string, CliCommandEntry> {
  const out: Record<string, CliCommandEntry> = {}
  for (const { contract: c } of routes) {
    if (!c?.cli) continue
    const route = `${c.method} ${c.path}`
    if (!c.path.startsWith(`${PREFIX}/`)) throw new Error(`${route}: the CLI calls /admin/v1 only`)
    if (out[c.cli.name]) throw new Error(`${route}: a second command ${c.cli.name}`)
    const cli = c.cli
    const opts = options(route, c, cli)
    const path = c.path
      .slice(PREFIX.length)
      .replace(/:(\w+)/g, (_, p: string) => `{${paramOption(p, cli)[0]}}`)
    out[cli.name] = {
      method: c.method,
      path,
      summary: cli.summary,
      ...(Object.keys(opts).length ? { options: opts } : {}),
    }
  }
  return out
}
