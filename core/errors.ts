// One error type for the whole service. The HTTP layer turns it into
// {code, message, http_status_code, details}; nothing else builds error bodies.

export type ErrorCode =
  | 'not_found'
  | 'already_exists'
  | 'version_conflict'
  | 'validation_error'
  | 'invalid_operation'
  | 'permission_denied'
  | 'too_many_requests'
  | 'http_client_error'
  | 'database_error'
  | 'system_error'
  | 'internal_error'
  | 'service_unavailable'

// As the reference system answers, so its clients keep working. A few cases keep the code and
// answer another status (401 for a missing key, 405, 413, 415): they pass `status` explicitly.
const STATUS: Record<ErrorCode, number> = {
  validation_error: 400,
  invalid_operation: 400,
  permission_denied: 403,
  not_found: 404,
  already_exists: 409,
  version_conflict: 409,
  too_many_requests: 429,
  service_unavailable: 503,
  http_client_error: 500,
  database_error: 500,
  system_error: 500,
  internal_error: 500,
}

export type ErrorDetails = Record<string, unknown>

export class AppError extends Error {
  readonly code: ErrorCode
  readonly details: ErrorDetails
  readonly status: number
  /** Seconds a client should wait before retrying (429, 503). */
  readonly retryAfter?: number

  constructor(
    code: ErrorCode,
    message: string,
    details: ErrorDetails = {},
    options: { status?: number; retryAfter?: number } = {},
  ) {
    super(message)
    this.name = 'AppError'
    this.code = code
    this.details = details
    this.status = options.status ?? STATUS[code]
    this.retryAfter = options.retryAfter
  }

  toBody(): { code: ErrorCode; message: string; http_status_code: number; details: ErrorDetails } {
    return { code: this.code, message: this.message, http_status_code: this.status, details: this.details }
  }
}

export const validationError = (field: string, reason: string, message?: string): AppError =>
  new AppError('validation_error', message ?? `${field}: ${reason}`, { [field]: reason })

export const notFound = (what: string, id: string): AppError =>
  new AppError('not_found', `${what} ${id} not found`, { id })

export const invalidOperation = (message: string, details: ErrorDetails = {}): AppError =>
  new AppError('invalid_operation', message, details)

export const versionConflict = (id: string, expected: number, actual: number): AppError =>
  new AppError('version_conflict', `record ${id} is at version ${actual}, not ${expected}`, {
    id,
    expected_version: expected,
    current_version: actual,
  })

export const alreadyExists = (message: string, details: ErrorDetails = {}): AppError =>
  new AppError('already_exists', message, details)

export const serviceUnavailable = (message: string, details: ErrorDetails = {}, retryAfter = 1): AppError =>
  new AppError('service_unavailable', message, details, { retryAfter })
