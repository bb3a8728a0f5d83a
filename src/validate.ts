// Compiled TypeBox checks whose failures become 422s keyed by dotted field paths
// (`/readings/3/payload/value` → `readings.3.payload.value`).
import { FormatRegistry, type TSchema, type Static } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { validationError, type FieldErrors } from './errors.js'

// TypeBox knows no string formats until they are registered; an unregistered format fails
// every value, so `format: 'date-time'` would refuse even valid timestamps.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$/
if (!FormatRegistry.Has('date-time'))
  FormatRegistry.Set('date-time', (v) => DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)))

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

export function compile<T extends TSchema>(schema: T): TypeCheck<T> {
  let c = compiled.get(schema)
  if (!c) {
    c = TypeCompiler.Compile(schema)
    compiled.set(schema, c)
  }
  return c as TypeCheck<T>
}

export function dotted(pointer: string, prefix = ''): string {
  const path = pointer.split('/').filter(Boolean).join('.')
  return prefix ? (path ? `${prefix}.${path}` : prefix) : path || 'body'
}

/** Field errors of `value` against `schema`, one message per field (the first found). */
export function fieldErrors(schema: TSchema, value: unknown, prefix = ''): FieldErrors {
  const errors: FieldErrors = {}
  for (const e of compile(schema).Errors(value)) {
    // A missing required property is reported at the property's own path.
    const key = dotted(e.path, prefix)
    if (errors[key]) continue
    const options = (e.schema as { anyOf?: { const?: unknown }[] }).anyOf
    const message =
      options && options.length && options.every((o) => o.const !== undefined)
        ? `must be one of ${options.map((o) => String(o.const)).join(', ')}`
        : e.message
    errors[key] = [describe(key, message)]
  }
  return errors
}

function describe(key: string, message: string): string {
  const field = key.split('.').pop()!
  if (message === 'Expected required property') return `The ${field} field is required.`
  if (message.startsWith('must be one of')) return `The ${field} field ${message}.`
  return `The ${field} field is invalid: ${message.charAt(0).toLowerCase()}${message.slice(1)}.`
}

/** Returns `value` typed by `schema`, or throws a 422 naming every offending field. */
export function check<T extends TSchema>(schema: T, value: unknown, prefix = ''): Static<T> {
  if (compile(schema).Check(value)) return value as Static<T>
  throw validationError(fieldErrors(schema, value, prefix))
}

/** Rejects unknown keys where a typo would otherwise be silently ignored. */
export function rejectUnknown(
  value: Record<string, unknown>,
  allowed: readonly string[],
  prefix = '',
): FieldErrors {
  const errors: FieldErrors = {}
  for (const k of Object.keys(value))
    if (!allowed.includes(k)) errors[prefix ? `${prefix}.${k}` : k] = [`Unknown field ${k}.`]
  return errors
}
