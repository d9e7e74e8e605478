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

function toAppError(err: unknown): AppError | undefined {
  if (err instanceof AppError) return err
  const e = (err ?? {}) as HttpishError
  if (e.code && UNAVAILABLE.has(e.code)) {
    return new AppError('service_unavailable', 'a storage engine is unavailable; retry later', {}, { retryAfter: 1 })
  }
  return fromHttpError(e)
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
    }
  }
}
