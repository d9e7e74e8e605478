// One ajv instance validates every request body and query string; the same schemas feed the
// OpenAPI document, so the two cannot drift.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { AppError } from './errors.ts'

export type JsonSchema = Record<string, unknown>

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

const bodyAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true }))
// Query strings arrive as text: numbers and booleans are coerced, single values become arrays where asked.
const queryAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: 'array' }))

const cache = new WeakMap<JsonSchema, ValidateFunction>()

function compile(ajv: Ajv, schema: JsonSchema): ValidateFunction {
  let fn = cache.get(schema)
  if (!fn) {
    fn = ajv.compile(schema)
    cache.set(schema, fn)
  }
  return fn
}

/** `/events/3/event_name` → `events[3].event_name`: the name a client wrote in its JSON. */
function fieldName(error: ErrorObject, root: string): string {
  const parts = error.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
  const params = error.params as Record<string, unknown>
  if (typeof params.missingProperty === 'string') parts.push(params.missingProperty)
  if (typeof params.additionalProperty === 'string') parts.push(params.additionalProperty)
  if (parts.length === 0) return root
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '')
}

function reason(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  if (error.keyword === 'required') return 'is required'
  if (error.keyword === 'additionalProperties') return 'is not a known field'
  if (error.keyword === 'enum') return `must be one of ${(params.allowedValues as unknown[]).join(', ')}`
  return error.message ?? 'is invalid'
}

function detailsOf(errors: ErrorObject[], root: string): Record<string, string> {
  const details: Record<string, string> = {}
  for (const e of errors) {
    if (e.keyword === 'if' || e.keyword === 'anyOf' || e.keyword === 'oneOf') continue
    const field = fieldName(e, root)
    details[field] ??= reason(e)
  }
  if (Object.keys(details).length === 0 && errors[0]) details[fieldName(errors[0], root)] = reason(errors[0])
  return details
}

function check<T>(ajv: Ajv, schema: JsonSchema, value: unknown, root: string): T {
  const fn = compile(ajv, schema)
  if (fn(value)) return value as T
  const details = detailsOf(fn.errors ?? [], root)
  const message = Object.entries(details)
    .map(([k, v]) => `${k} ${v}`)
    .join('; ')
  throw new AppError('validation_error', message, details)
}

export const validateBody = <T>(schema: JsonSchema, value: unknown): T => check<T>(bodyAjv, schema, value, 'body')
export const validateQuery = <T>(schema: JsonSchema, value: unknown): T => check<T>(queryAjv, schema, value, 'query')
