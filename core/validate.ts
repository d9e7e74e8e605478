// One ajv instance validates every request body and query string; the same schemas feed the
// OpenAPI document, so the two cannot drift. Every input is bounded here, in one place: a schema that
// does not bound a string, number, array or map gets the default bound below (boundedSchema), decimals
// come from decimalSchema, date-times from the date-time format, and wellFormed refuses NUL characters,
// unpaired surrogates and deep nesting anywhere in a request before any schema looks at it.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { fullFormats } from 'ajv-formats/dist/formats.js'
import { AppError } from './errors.ts'

export type JsonSchema = Record<string, unknown>

/** The bounds of every request input (docs/api.md, docs/decisions.md). */
export const BOUNDS = {
  /** A string whose schema names no maxLength: ids, names, codes, keys and metadata values. */
  text: 255,
  /** An array whose schema names no maxItems. */
  items: 1000,
  /** Keys of a map (metadata, sync_config) whose schema names no maxProperties. */
  mapKeys: 100,
  /** An integer whose schema names no range: a Postgres integer. */
  integer: 2_147_483_647,
  /** A JSON number (thresholds, rates) whose schema names no range: below 10^18 either way. */
  number: 1e18,
  /** Decimal strings (money, quantities, rates): digits before and after the point. */
  decimalIntegerDigits: 18,
  decimalPlaces: 12,
  /** Nesting of arrays and objects in a body. */
  depth: 32,
  /** Date-times, from the Unix epoch to the last four-digit year. */
  earliest: Date.UTC(1970, 0, 1),
  latest: Date.UTC(10000, 0, 1),
} as const

const DECIMAL_PATTERNS = new Set<string>()
const DECIMAL_RULE = `at most ${BOUNDS.decimalIntegerDigits} digits before the point and ${BOUNDS.decimalPlaces} after it`
const decimalText = (signed: boolean) => `${signed ? '' : 'non-negative '}decimal number as a string, ${DECIMAL_RULE}`

/**
 * Plain decimal text, as money and quantities travel: "12", "0.000001"; no exponent, no "+", no ".5";
 * at most 18 integer digits and 12 places, so no amount can cost a billing run more than a few digits.
 */
export function decimalSchema(signed: boolean): JsonSchema {
  const { decimalIntegerDigits: i, decimalPlaces: p } = BOUNDS
  const pattern = `^${signed ? '-?' : ''}\\d{1,${i}}(\\.\\d{1,${p}})?$`
  DECIMAL_PATTERNS.add(pattern)
  return {
    type: 'string',
    pattern,
    maxLength: i + p + 2,
    description: decimalText(signed),
  }
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv
const rfc3339 = fullFormats['date-time'] as { validate: (s: string) => boolean }
const rfcDate = fullFormats.date as { validate: (s: string) => boolean }

/** RFC 3339 that Date can read (no leap second), within BOUNDS: every date-time a handler gets becomes a valid Date. */
function instant(s: string): boolean {
  if (!rfc3339.validate(s)) return false
  const t = Date.parse(s)
  return t >= BOUNDS.earliest && t < BOUNDS.latest
}

const day = (s: string): boolean => rfcDate.validate(s) && Date.parse(s) >= BOUNDS.earliest

function newAjv(options: { coerceTypes?: 'array' }): Ajv {
  // verbose: errors carry their schema, so a decimal's or a date's refusal can say what is expected.
  const ajv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true, verbose: true, ...options }))
  ajv.addFormat('date-time', { type: 'string', validate: instant })
  ajv.addFormat('date', { type: 'string', validate: day })
  return ajv
}

const bodyAjv = newAjv({})
// Query strings arrive as text: numbers and booleans are coerced, single values become arrays where asked.
const queryAjv = newAjv({ coerceTypes: 'array' })

const typesOf = (schema: JsonSchema): unknown[] => (Array.isArray(schema.type) ? schema.type : [schema.type])

/**
 * The schema with the default bound on every string, number, array and map that names none. The
 * OpenAPI document shows this form, so a client reads the bounds that are applied.
 */
export function boundedSchema(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema }
  const types = typesOf(schema)
  if (types.includes('string') && out.maxLength === undefined && out.enum === undefined) out.maxLength = BOUNDS.text
  if (types.includes('integer')) {
    out.maximum ??= BOUNDS.integer
    out.minimum ??= -BOUNDS.integer - 1
  } else if (types.includes('number')) {
    if (out.maximum === undefined && out.exclusiveMaximum === undefined) out.exclusiveMaximum = BOUNDS.number
    if (out.minimum === undefined && out.exclusiveMinimum === undefined) out.exclusiveMinimum = -BOUNDS.number
  }
  if (types.includes('array')) out.maxItems ??= BOUNDS.items
  if (types.includes('object') && out.additionalProperties !== undefined && out.additionalProperties !== false) {
    out.maxProperties ??= BOUNDS.mapKeys
    out.propertyNames ??= { maxLength: BOUNDS.text }
  }
  const sub = (s: unknown): unknown => (s && typeof s === 'object' && !Array.isArray(s) ? boundedSchema(s as JsonSchema) : s)
  const map = (m: unknown): unknown => (m && typeof m === 'object' ? Object.fromEntries(Object.entries(m).map(([k, s]) => [k, sub(s)])) : m)
  if (out.properties) out.properties = map(out.properties)
  if (out.patternProperties) out.patternProperties = map(out.patternProperties)
  for (const key of ['items', 'additionalProperties', 'not', 'if', 'then', 'else']) if (out[key] !== undefined) out[key] = sub(out[key])
  for (const key of ['oneOf', 'anyOf', 'allOf']) if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map(sub)
  return out
}

const caches = new Map<Ajv, WeakMap<JsonSchema, ValidateFunction>>()

function compile(ajv: Ajv, schema: JsonSchema): ValidateFunction {
  let cache = caches.get(ajv)
  if (!cache) caches.set(ajv, (cache = new WeakMap()))
  let fn = cache.get(schema)
  if (!fn) {
    fn = ajv.compile(boundedSchema(schema))
    cache.set(schema, fn)
  }
  return fn
}

/** `events[3].event_name`: the name a client wrote in its JSON. */
const joinPath = (parts: (string | number)[]): string =>
  parts.reduce<string>((acc, p) => (typeof p === 'number' || /^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '')

/** `/events/3/event_name` → `events[3].event_name`. */
function fieldName(error: ErrorObject, root: string): string {
  const parts = error.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
  const params = error.params as Record<string, unknown>
  if (typeof params.missingProperty === 'string') parts.push(params.missingProperty)
  if (typeof params.additionalProperty === 'string') parts.push(params.additionalProperty)
  if (typeof params.propertyName === 'string') parts.push(params.propertyName)
  if (parts.length === 0) return root
  return joinPath(parts)
}

function reason(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  const schema = (error.parentSchema ?? {}) as JsonSchema
  if (error.keyword === 'required') return 'is required'
  if (error.keyword === 'additionalProperties') return 'is not a known field'
  if (error.keyword === 'enum') return `must be one of ${(params.allowedValues as unknown[]).join(', ')}`
  if (error.keyword === 'maxLength') return `must be at most ${params.limit as number} characters`
  if (error.keyword === 'propertyNames') return `key must be at most ${BOUNDS.text} characters`
  // From the pattern, not the description: a field's schema may describe itself over decimalSchema's text.
  if (error.keyword === 'pattern' && schema.format === undefined && DECIMAL_PATTERNS.has(schema.pattern as string)) return `must be a ${decimalText((schema.pattern as string).startsWith('^-?'))}`
  return error.message ?? 'is invalid'
}

function detailsOf(errors: ErrorObject[], root: string): Record<string, string> {
  const details: Record<string, string> = {}
  for (const e of errors) {
    // A key's own refusal (inside propertyNames) is reported by the propertyNames error that names the key.
    if (e.keyword === 'if' || e.keyword === 'anyOf' || e.keyword === 'oneOf' || 'propertyName' in e) continue
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

// ---- well-formed text and shallow nesting -------------------------------------------------------------

const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed

/** Text Postgres can store and every JSON encoder writes alike: no NUL, no unpaired surrogate. */
const cleanText = (s: string): boolean => isWellFormed.call(s) && !s.includes('\u0000')

/** The path to the first flaw and what it is, or undefined; recursion is as deep as BOUNDS.depth at most. */
function flaw(value: unknown, depth: number): { path: (string | number)[]; reason: string } | undefined {
  if (typeof value === 'string') return cleanText(value) ? undefined : { path: [], reason: 'must not contain NUL characters or unpaired UTF-16 surrogates' }
  if (value === null || typeof value !== 'object') return undefined
  if (depth >= BOUNDS.depth) return { path: [], reason: `is nested deeper than ${BOUNDS.depth} levels` }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const f = flaw(value[i], depth + 1)
      if (f) return (f.path.unshift(i), f)
    }
    return undefined
  }
  for (const key in value) {
    if (!cleanText(key)) return { path: [key.replace(/[\u0000\uD800-\uDFFF]/g, '\uFFFD')], reason: 'key must not contain NUL characters or unpaired UTF-16 surrogates' }
    const f = flaw((value as Record<string, unknown>)[key], depth + 1)
    if (f) return (f.path.unshift(key), f)
  }
  return undefined
}

/** Refuses a request part (`body`, `query`, `path`) holding NUL, unpaired surrogates or nesting beyond BOUNDS.depth. */
export function wellFormed(value: unknown, root: string): void {
  const f = flaw(value, 0)
  if (!f) return
  const field = f.path.length === 0 ? root : joinPath(f.path)
  throw new AppError('validation_error', `${field} ${f.reason}`, { [field]: f.reason })
}
