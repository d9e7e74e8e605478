// The input bounds, applied in one place: decimals, default bounds of strings, numbers, arrays and maps,
// date-times, and well-formed text and nesting.
import { describe, expect, it } from 'vitest'
import { AppError } from './errors.ts'
import { boundedSchema, decimalSchema, validateBody, validateQuery, wellFormed, type JsonSchema } from './validate.ts'

/** The details of the refusal, or 'ok'. */
function verdict(schema: JsonSchema, value: unknown, validate = validateBody): Record<string, unknown> | 'ok' {
  try {
    validate(schema, value)
    return 'ok'
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    expect(err.code).toBe('validation_error')
    return err.details
  }
}

const amount = { type: 'object', properties: { amount: decimalSchema(false), delta: decimalSchema(true) } }

describe('decimals', () => {
  it.each([
    ['0', 'ok'],
    ['12', 'ok'],
    ['0.000000000001', 'ok'], // 12 places
    ['999999999999999999', 'ok'], // 18 integer digits
    ['999999999999999999.999999999999', 'ok'], // both at their bound
    ['1000000000000000000', 'refused'], // 19 integer digits
    ['0.0000000000001', 'refused'], // 13 places
    ['9'.repeat(100_000), 'refused'], // the 100,000-digit price that stalled a billing run
    ['1e5', 'refused'],
    ['.5', 'refused'],
    ['5.', 'refused'],
    ['+5', 'refused'],
    ['-5', 'refused'], // not for a non-negative field
    [' 5', 'refused'],
  ])('amount %#: %s is %s', (value, expected) => {
    const v = verdict(amount, { amount: value })
    expect(v === 'ok' ? 'ok' : 'refused').toBe(expected)
    // Too long to be any bounded decimal, or not one: either way the field is named.
    if (v !== 'ok') expect(Object.keys(v)).toEqual(['amount'])
    if (v !== 'ok' && value.length <= 32) expect(v).toEqual({ amount: 'must be a non-negative decimal number as a string, at most 18 digits before the point and 12 after it' })
  })

  it('says what a decimal must be even when the field describes itself otherwise', () => {
    const described = { type: 'object', properties: { minimum: { ...decimalSchema(false), description: 'only invoices whose subtotal reaches it' } } }
    expect(verdict(described, { minimum: 'abc' })).toEqual({ minimum: 'must be a non-negative decimal number as a string, at most 18 digits before the point and 12 after it' })
  })

  it('takes a sign where the field is signed, with the same bounds', () => {
    expect(verdict(amount, { delta: '-999999999999999999.999999999999' })).toBe('ok')
    expect(verdict(amount, { delta: '-1000000000000000000' })).toEqual({ delta: expect.stringContaining('at most 18 digits') })
  })
})

describe('default bounds', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: {
      name: { type: 'string' },
      note: { type: 'string', maxLength: 2000 },
      count: { type: 'integer', minimum: 0 },
      rate: { type: 'number' },
      tags: { type: 'array', items: { type: 'string' } },
      metadata: { type: 'object', additionalProperties: { type: 'string' } },
    },
  }

  it.each([
    ['a name of 255 characters', { name: 'x'.repeat(255) }, 'ok'],
    ['a name of 256 characters', { name: 'x'.repeat(256) }, { name: 'must be at most 255 characters' }],
    ['a note within its own bound', { note: 'x'.repeat(2000) }, 'ok'],
    ['the largest Postgres integer', { count: 2_147_483_647 }, 'ok'],
    ['one more', { count: 2_147_483_648 }, { count: 'must be <= 2147483647' }],
    ['1e20 as an integer', { count: 1e20 }, { count: 'must be <= 2147483647' }],
    ['a number just below 10^18', { rate: 999_999_999_999_999_900 }, 'ok'],
    ['10^18', { rate: 1e18 }, { rate: 'must be < 1000000000000000000' }],
    ['Infinity (1e309)', { rate: Number.POSITIVE_INFINITY }, { rate: 'must be < 1000000000000000000' }],
    ['1000 items', { tags: Array.from({ length: 1000 }, () => 't') }, 'ok'],
    ['1001 items', { tags: Array.from({ length: 1001 }, () => 't') }, { tags: 'must NOT have more than 1000 items' }],
    ['100 metadata keys', { metadata: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 'v'])) }, 'ok'],
    ['101 metadata keys', { metadata: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 'v'])) }, { metadata: 'must NOT have more than 100 properties' }],
    ['a metadata key of 256 characters', { metadata: { ['k'.repeat(256)]: 'v' } }, { [`metadata.${'k'.repeat(256)}`]: 'key must be at most 255 characters' }],
  ])('%s', (_, value, expected) => {
    expect(verdict(schema, value)).toEqual(expected)
  })

  it('leaves a bound the schema names, and an enum, as they are', () => {
    const bounded = boundedSchema({ type: 'object', properties: { a: { type: 'string', maxLength: 9 }, b: { type: 'string', enum: ['x'] } } }) as { properties: Record<string, JsonSchema> }
    expect(bounded.properties.a).toEqual({ type: 'string', maxLength: 9 })
    expect(bounded.properties.b).toEqual({ type: 'string', enum: ['x'] })
  })

  it('bounds query strings alike: offset=1e20 is refused', () => {
    const query: JsonSchema = { type: 'object', properties: { offset: { type: 'integer', minimum: 0 } } }
    expect(verdict(query, { offset: '1e20' }, validateQuery)).toEqual({ offset: 'must be <= 2147483647' })
    expect(verdict(query, { offset: '1e309' }, validateQuery)).toEqual({ offset: 'must be <= 2147483647' })
    expect(verdict(query, { offset: '20' }, validateQuery)).toBe('ok')
  })
})

describe('date-times', () => {
  const schema: JsonSchema = { type: 'object', properties: { at: { type: 'string', format: 'date-time' }, day: { type: 'string', format: 'date' } } }
  it.each([
    ['2026-02-28T23:59:59Z', 'ok'],
    ['2024-02-29T00:00:00+02:00', 'ok'],
    ['1970-01-01T00:00:00Z', 'ok'],
    ['9999-12-31T23:59:59.999Z', 'ok'],
    ['2026-02-30T00:00:00Z', 'refused'],
    ['1969-12-31T23:59:59Z', 'refused'],
    ['0000-01-01T00:00:00Z', 'refused'],
    ['2016-12-31T23:59:60Z', 'refused'], // a leap second: no Date holds it
    ['2026-01-01T00:00:00', 'refused'], // no zone
  ])('%s is %s', (at, expected) => {
    expect(verdict(schema, { at }) === 'ok' ? 'ok' : 'refused').toBe(expected)
  })

  it('bounds dates alike', () => {
    expect(verdict(schema, { day: '2026-02-28' })).toBe('ok')
    expect(verdict(schema, { day: '2026-02-30' })).not.toBe('ok')
    expect(verdict(schema, { day: '1900-01-01' })).not.toBe('ok')
  })
})

describe('wellFormed', () => {
  const refusal = (value: unknown): unknown => {
    try {
      wellFormed(value, 'body')
      return 'ok'
    } catch (err) {
      return (err as AppError).details
    }
  }
  const nest = (levels: number): unknown => {
    let v: unknown = 'leaf'
    for (let i = 0; i < levels; i++) v = { a: v }
    return v
  }

  it('names the field holding a NUL or an unpaired surrogate, in values and keys', () => {
    expect(refusal({ name: 'ok', lines: [{ memo: 'a\u0000b' }] })).toEqual({ 'lines[0].memo': 'must not contain NUL characters or unpaired UTF-16 surrogates' })
    expect(refusal({ name: 'lone \ud800' })).toEqual({ name: expect.stringContaining('surrogates') })
    expect(refusal({ metadata: { 'k\u0000': 'v' } })).toEqual({ 'metadata.k\ufffd': expect.stringContaining('key must not contain') })
    expect(refusal('\udc00')).toEqual({ body: expect.stringContaining('surrogates') })
    expect(refusal({ emoji: '😀 ok', text: 'über' })).toBe('ok')
  })

  it('takes 32 levels of nesting and refuses 33, however deep the rest goes', () => {
    expect(refusal(nest(31))).toBe('ok')
    expect(refusal(nest(33))).toEqual({ [Array.from({ length: 32 }, () => 'a').join('.')]: 'is nested deeper than 32 levels' })
    expect(Object.values(refusal(JSON.parse('['.repeat(10_000) + ']'.repeat(10_000))) as object)).toEqual(['is nested deeper than 32 levels'])
  })
})
