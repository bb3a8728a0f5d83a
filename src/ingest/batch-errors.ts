// A batch is answered with one 422 listing every field error, so the checks and the
// per-profile readers add to one collection instead of throwing at the first.
import type { FieldErrors } from '../errors.js'
import { fieldErrors } from '../validate.js'

/** Field errors of the batch, collected while reading it (one 422 at the end). */
export class BatchErrors {
  readonly errors: FieldErrors = {}
  /** Records a problem; returns null so a reader can `return errs.add(...)`. */
  add(key: string, msg: string): null {
    ;(this.errors[key] ??= []).push(msg)
    return null
  }
  schema(schema: Parameters<typeof fieldErrors>[0], value: unknown, key: string): null {
    Object.assign(this.errors, fieldErrors(schema, value, key))
    return null
  }
  get any(): boolean {
    return Object.keys(this.errors).length > 0
  }
}
