// Webhook field mappings (operator-api.md, "Mapping"): JSONata expressions compiled once per
// mapping version and evaluated per delivery.
//
// `$$` in JSONata is the root of the evaluation input (the variable named `$`, bound by
// `evaluate()` after any caller bindings, so it cannot be passed in as a binding). Field
// expressions must see the *item* as their input and the *whole body* as `$$`, so every
// field expression is compiled wrapped as
//     ($$ := $__mf_body; (<expr>))
// and evaluated with the item as input and the body bound to `$__mf_body`. The block-local
// `$$` assignment shadows the root binding inside the block only; `$` (the context) stays
// the item. The raw expression is compiled first on its own so syntax errors point at the
// operator's text, and a raw expression that compiles means the same inside the parentheses.
import jsonata from 'jsonata'
import { FieldErrorCollector, validationError } from '../errors.js'
import { registerMappingHelpers } from './mapping-helpers.js'

export const MAPPING_FIELDS = [
  'meter',
  'profile',
  'kind',
  'value',
  'unit',
  'recorded_at',
  'payload',
] as const
export type MappingField = (typeof MAPPING_FIELDS)[number]

export interface MappingDef {
  items?: string
  fields: Partial<Record<MappingField, string>> & { recorded_at: string }
}

type Expr = ReturnType<typeof jsonata>

export interface CompiledMapping {
  def: MappingDef
  items: Expr | null
  fields: [MappingField, Expr][]
}

/** Evaluation budget of one expression: wall time and recursion depth. */
const MAX_EVAL_MS = 1000
const MAX_DEPTH = 200

function compileOne(
  src: string,
  key: string,
  errs: FieldErrorCollector,
  wrap: boolean,
): Expr | null {
  try {
    jsonata(src)
  } catch (e) {
    const err = e as { message?: string; position?: number }
    errs.add(
      key,
      `The expression does not compile: ${err.message ?? String(e)}${err.position !== undefined ? ` (at ${err.position})` : ''}.`,
    )
    return null
  }
  const expr = jsonata(wrap ? `($$ := $__mf_body;\n(${src}\n))` : src)
  // $base64ToHex and the other preset helpers (src/webhooks/mapping-helpers.ts).
  registerMappingHelpers(expr)
  timebox(expr)
  return expr
}

/** Stops runaway expressions (deep recursion, endless loops) instead of blocking ingest. */
function timebox(expr: Expr): void {
  let depth = 0
  let started = 0
  expr.assign(Symbol.for('jsonata.__evaluate_entry') as unknown as string, () => {
    if (depth === 0) started = Date.now()
    depth++
    if (depth > MAX_DEPTH)
      throw Object.assign(new Error(`expression recursion deeper than ${MAX_DEPTH}`), {
        code: 'MF_DEPTH',
      })
    if (Date.now() - started > MAX_EVAL_MS)
      throw Object.assign(new Error(`expression ran longer than ${MAX_EVAL_MS} ms`), {
        code: 'MF_TIME',
      })
  })
  expr.assign(Symbol.for('jsonata.__evaluate_exit') as unknown as string, () => {
    depth--
  })
}

/**
 * Validates and compiles a mapping definition; 422 keyed `mapping.<...>` on any problem
 * (wrong shape, unknown field, expression that does not compile).
 */
export function compileMapping(raw: unknown, prefix = 'mapping'): CompiledMapping {
  const errs = new FieldErrorCollector()
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw validationError({ [prefix]: ['The mapping must be an object with fields.'] })
  const m = raw as Record<string, unknown>
  for (const k of Object.keys(m))
    if (k !== 'items' && k !== 'fields')
      errs.add(`${prefix}.${k}`, `Unknown mapping property ${k}.`)
  let items: Expr | null = null
  if (m.items !== undefined) {
    if (typeof m.items !== 'string' || m.items.trim() === '')
      errs.add(`${prefix}.items`, 'The items expression must be a non-empty string.')
    else items = compileOne(m.items, `${prefix}.items`, errs, false)
  }
  const fields: [MappingField, Expr][] = []
  const f = m.fields
  if (typeof f !== 'object' || f === null || Array.isArray(f)) {
    errs.add(`${prefix}.fields`, 'The fields object is required.')
  } else {
    const fo = f as Record<string, unknown>
    for (const k of Object.keys(fo)) {
      const key = `${prefix}.fields.${k}`
      if (!(MAPPING_FIELDS as readonly string[]).includes(k)) {
        errs.add(key, `Unknown field ${k}; allowed: ${MAPPING_FIELDS.join(', ')}.`)
        continue
      }
      const v = fo[k]
      if (typeof v !== 'string' || v.trim() === '') {
        errs.add(key, `The ${k} expression must be a non-empty string.`)
        continue
      }
      const e = compileOne(v, key, errs, true)
      if (e) fields.push([k as MappingField, e])
    }
    if (fo.recorded_at === undefined)
      errs.add(`${prefix}.fields.recorded_at`, 'The recorded_at expression is required.')
  }
  errs.throwIfAny()
  const def: MappingDef = { fields: { ...(f as MappingDef['fields']) } }
  if (m.items !== undefined) def.items = m.items as string
  return { def, items, fields }
}

/** A delivery that does not fit the mapping at all: 422 for the whole delivery. */
function misfit(key: string, message: string): never {
  throw validationError({ [key]: [message] }, message)
}

function describeEvalError(e: unknown): string {
  const err = e as { message?: string; code?: string }
  return `${err.message ?? String(e)}${err.code && !String(err.code).startsWith('MF_') ? ` (${err.code})` : ''}`
}

/** Strips JSONata's sequence wrapper and internal markers so the result is plain JSON. */
function plain(v: unknown): unknown {
  if (v === undefined) return undefined
  if (typeof v === 'function') return undefined
  return JSON.parse(JSON.stringify(v)) as unknown
}

/** The list of items of a delivery, in delivery order. */
export async function mapItems(m: CompiledMapping, body: unknown): Promise<unknown[]> {
  let list: unknown = body
  if (m.items) {
    try {
      list = plain(await m.items.evaluate(body))
    } catch (e) {
      misfit('mapping.items', `The items expression failed to evaluate: ${describeEvalError(e)}.`)
    }
    if (list === undefined) return []
  }
  if (Array.isArray(list)) return list
  if (typeof list === 'object' && list !== null) return [list]
  return misfit(
    m.items ? 'mapping.items' : 'body',
    m.items
      ? 'The items expression must give an array or one object.'
      : 'The body must be a JSON array or object.',
  )
}

/** One mapped item: the fields whose expressions gave a value (undefined or null leaves a field out). */
export async function mapFields(
  m: CompiledMapping,
  item: unknown,
  body: unknown,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  for (const [name, expr] of m.fields) {
    let v: unknown
    try {
      v = plain(await expr.evaluate(item, { __mf_body: body }))
    } catch (e) {
      misfit(
        `mapping.fields.${name}`,
        `The ${name} expression failed to evaluate: ${describeEvalError(e)}.`,
      )
    }
    // null (a JSON path that exists but holds null) is treated like undefined.
    if (v !== undefined && v !== null) out[name] = v
  }
  return out
}

const ISO_8601 =
  /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|z|[+-]\d{2}:?\d{2})?$/

/** Epoch ms of an ISO 8601 date-time (no offset = UTC, as storage is), or null. */
export function parseIso(v: unknown): number | null {
  if (typeof v !== 'string') return null
  const m = ISO_8601.exec(v)
  if (!m) return null
  let zone = m[3] ?? 'Z'
  if (/^[+-]\d{4}$/.test(zone)) zone = `${zone.slice(0, 3)}:${zone.slice(3)}`
  const [hh, mm, rest] = m[2]!.split(':')
  if (Number(hh) > 23 || Number(mm) > 59 || (rest !== undefined && Number(rest.slice(0, 2)) > 59))
    return null
  const t = Date.parse(`${m[1]}T${m[2]}${zone === 'z' ? 'Z' : zone}`)
  if (Number.isNaN(t)) return null
  // Date.parse rolls 2024-02-30 over into March; a real date must survive the round trip.
  const [y, mo, d] = m[1]!.split('-').map(Number)
  const day = new Date(Date.UTC(y!, mo! - 1, d!))
  if (day.getUTCMonth() !== mo! - 1 || day.getUTCDate() !== d) return null
  return t
}

export function isIsoTimestamp(v: unknown): v is string {
  return parseIso(v) !== null
}

/**
 * The first required field the mapped item lacks, or null. Shape A (no payload) needs meter,
 * kind, value and unit; shape B (payload) needs payload, and meter unless a profile is
 * declared (a wM-Bus profile derives it from the telegram). recorded_at is always required
 * and must be an ISO 8601 string. Fields present with a wrong type are left to the
 * pipeline's validation (a 422, as for /reportData).
 */
export function missingField(
  item: Record<string, unknown>,
): { field: string; reason: string } | null {
  const absent = (k: string) => item[k] === undefined || item[k] === null
  if (absent('recorded_at'))
    return { field: 'recorded_at', reason: 'recorded_at: the mapping gave no value' }
  if (!isIsoTimestamp(item.recorded_at))
    return { field: 'recorded_at', reason: 'recorded_at: not an ISO 8601 timestamp' }
  const required = absent('payload')
    ? ['meter', 'kind', 'value', 'unit']
    : absent('profile')
      ? ['meter']
      : []
  for (const k of required)
    if (absent(k)) return { field: k, reason: `${k}: the mapping gave no value` }
  return null
}
