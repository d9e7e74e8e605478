// The one place that turns failures into the error body {code, message, http_status_code, details}.
// Unknown errors are logged with the request id and answered with a fixed message: nothing leaks.
// Flexprice's clients read {success: false, error: {message, internal_error}}: both are in every body.
import type { Context, Next } from 'koa'
import { AppError } from '../core/errors.ts'
import type { Logger } from '../infra/logger.ts'

interface HttpishError {
  status?: number
  statusCode?: number
  type?: string
  expose?: boolean
  message?: string
  code?: string
}

/** Errors raised by Koa, the body parser and the router, mapped to our codes. */
function fromHttpError(err: HttpishError): AppError | undefined {
  const status = err.status ?? err.statusCode
  if (!status || status >= 500) return undefined
  if (status === 413 || err.type === 'entity.too.large') {
    return new AppError('validation_error', 'request body is too large', { body: 'exceeds the size limit' }, { status: 413 })
  }
  if (status === 415 || err.type === 'unsupported') {
    return new AppError('validation_error', 'request body must be JSON', { body: 'must be application/json' }, { status: 415 })
  }
  if (status === 400) {
    return new AppError('validation_error', 'request body is not valid JSON', { body: err.message ?? 'malformed JSON' })
  }
  if (status === 405) return new AppError('invalid_operation', 'method not allowed on this path', {}, { status: 405 })
  if (status === 404) return new AppError('not_found', 'no such route', {})
  return new AppError('validation_error', err.message ?? 'bad request', {}, { status })
}

/** Drivers report broken connections with these codes: the engine is unavailable, the request may be retried. */
const UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT', 'CONNECTION_DESTROYED'])

interface PostgresError {
  name?: string
  code?: string
  severity?: string
  column_name?: string
}

/**
 * A Postgres refusal that a request's values caused, or that concurrent requests caused, as the client's
 * error; undefined for anything else. Validation refuses such values first; this is the net under it, so a
 * value that slips through is a 4xx naming what it can (the column), never a 500 with the driver's words.
 */
function fromPostgres(e: PostgresError): AppError | undefined {
  const code = e.code
  if (!code || e.name !== 'PostgresError' || !/^[0-9A-Z]{5}$/.test(code)) return undefined
  const field = e.column_name ?? 'body'
  // Class 22 (data exception: out of range, malformed text, NUL), 23514 (a check), 54000 (an index row too large).
  if (code.startsWith('22') || code === '23514' || code === '23502' || code === '54000') {
    return new AppError('validation_error', `${field} holds a value that cannot be stored`, { [field]: 'is out of range or malformed' })
  }
  if (code === '23505') return new AppError('already_exists', 'a record with these values already exists', { [field]: 'already exists' })
  // A referenced record went away, or two requests collided (serialization, deadlock, lock wait): retry.
  if (code === '23503' || code === '40001' || code === '40P01' || code === '55P03') {
    return new AppError('version_conflict', 'a concurrent change interfered with this request; retry it', { retry: true }, { status: 409 })
  }
  // Connection trouble, resources, shutdown, statement timeout: the engine, not the request.
  if (code.startsWith('08') || code.startsWith('53') || code.startsWith('57')) {
    return new AppError('service_unavailable', 'a storage engine is unavailable; retry later', {}, { retryAfter: 1 })
  }
  return undefined
}

function toAppError(err: unknown): AppError | undefined {
  if (err instanceof AppError) return err
  const e = (err ?? {}) as HttpishError
  if (e.code && UNAVAILABLE.has(e.code)) {
    return new AppError('service_unavailable', 'a storage engine is unavailable; retry later', {}, { retryAfter: 1 })
  }
  return fromPostgres(e as PostgresError) ?? fromHttpError(e)
}

/** The spec's fields, and beside them the ones Flexprice's SDK parses (its typed error shows `error.message`). */
function withFlexpriceFields(err: AppError) {
  const body = err.toBody()
  const internal = Object.keys(body.details).length ? `${body.code}: ${JSON.stringify(body.details)}` : body.code
  return { ...body, success: false, error: { message: body.message, internal_error: internal } }
}

export function errorHandler(logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next()
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError('not_found', `no route ${ctx.method} ${ctx.path}`, { path: ctx.path })
    } catch (err) {
      let appErr = toAppError(err)
      if (!appErr) {
        logger.error({ err, request_id: ctx.state.requestId }, 'unhandled error')
        appErr = new AppError('internal_error', `internal error; quote request id ${ctx.state.requestId as string}`, { request_id: ctx.state.requestId })
      }
      ctx.status = appErr.status
      ctx.body = withFlexpriceFields(appErr)
      if (appErr.retryAfter !== undefined) ctx.set('Retry-After', String(appErr.retryAfter))
      // Refused before its body was read (a 413 answers at the limit): the rest of it is still coming on this
      // connection, so it is closed after the answer; kept alive, a client's next request on it failed.
      if (!ctx.req.complete) ctx.set('Connection', 'close')
    }
  }
}
