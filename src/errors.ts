// The one table every error response is made from. A handler throws (or returns) an ApiError;
// the HTTP layer turns it into `{message, ...}` with the table's status. Field-level problems
// travel as `errors: {<field key>: [messages]}` (422) so clients can point at the input.

export const ErrorTable = {
  Unauthenticated: { status: 401, message: 'Unauthenticated.' },
  PlanLimit: { status: 402, message: 'The workspace is at its plan meter limit.' },
  MissingScope: { status: 403, message: 'This token lacks the scope required by this endpoint.' },
  Forbidden: {
    status: 403,
    message: 'The token creator lacks the permission required by this endpoint.',
  },
  NotFound: { status: 404, message: 'Not found.' },
  MethodNotAllowed: { status: 405, message: 'Method not allowed.' },
  GroupConflict: { status: 409, message: 'Conflict.' },
  Conflict: { status: 409, message: 'Conflict.' },
  PayloadTooLarge: { status: 413, message: 'Request body too large.' },
  ValidationFailed: { status: 422, message: 'The given data was invalid.' },
  RateLimited: { status: 429, message: 'Too many requests.' },
  Internal: { status: 500, message: 'Internal server error.' },
  Unavailable: { status: 503, message: 'Service temporarily unavailable.' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ErrorTable
export type FieldErrors = Record<string, string[]>

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly errors: FieldErrors | undefined
  readonly extra: Record<string, unknown> | undefined

  constructor(
    code: ErrorCode,
    message?: string,
    errors?: FieldErrors,
    extra?: Record<string, unknown>,
  ) {
    super(message ?? ErrorTable[code].message)
    this.code = code
    this.status = ErrorTable[code].status
    this.errors = errors
    this.extra = extra
  }

  body(): Record<string, unknown> {
    const b: Record<string, unknown> = { message: this.message, ...this.extra }
    if (this.errors) b.errors = this.errors
    return b
  }
}

export const apiError = (code: ErrorCode, message?: string, extra?: Record<string, unknown>) =>
  new ApiError(code, message, undefined, extra)

/** 422 with field keys; the message names the first offending field so a log line is enough. */
export function validationError(errors: FieldErrors, message?: string): ApiError {
  const keys = Object.keys(errors)
  const first = keys[0]
  const msg =
    message ??
    (first
      ? `${errors[first]![0]}${keys.length > 1 ? ` (and ${keys.length - 1} more error${keys.length > 2 ? 's' : ''})` : ''}`
      : ErrorTable.ValidationFailed.message)
  return new ApiError('ValidationFailed', msg, errors)
}

/** Collects field errors while checking a body; throws one 422 at the end. */
export class FieldErrorCollector {
  readonly errors: FieldErrors = {}
  add(field: string, message: string): void {
    ;(this.errors[field] ??= []).push(message)
  }
  get empty(): boolean {
    return Object.keys(this.errors).length === 0
  }
  throwIfAny(message?: string): void {
    if (!this.empty) throw validationError(this.errors, message)
  }
}
