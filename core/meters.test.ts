import { describe, expect, it } from 'vitest'
import { matches, numericValue, resolveEvent, resolveUsage, type MeterRules } from './meters.ts'

const meter = (aggregation: MeterRules['aggregation'], filters: MeterRules['filters'] = []): MeterRules => ({ id: 'm', revision: 3, eventName: 'call', filters, aggregation })
const event = (properties: Record<string, unknown>, eventName = 'call') => ({ eventName, properties })

describe('matches', () => {
  it('needs the event name and every filter, comparing property text', () => {
    const m = meter({ type: 'COUNT' }, [{ key: 'model', values: ['gpt', '4'] }, { key: 'ok', values: ['true'] }])
    expect(matches(m, event({ model: 'gpt', ok: true }))).toBe(true)
    expect(matches(m, event({ model: 4, ok: 'true' }))).toBe(true)
    expect(matches(m, event({ model: 'gpt' }))).toBe(false)
    expect(matches(m, event({ model: 'claude', ok: true }))).toBe(false)
    expect(matches(m, event({ model: 'gpt', ok: true }, 'other'))).toBe(false)
    expect(matches(m, event({ model: ['gpt'], ok: true }))).toBe(false)
  })
})

describe('numericValue', () => {
  it.each([
    [12, '12'],
    [0.1, '0.1'],
    ['12345678901234567890.123456789012', '12345678901234567890.123456789012'],
    [' -3.50 ', '-3.5'],
    ['1e3', '1000'],
    ['.5', '0.5'],
  ])('%j is %s', (v, expected) => {
    expect(numericValue(v)?.toFixed()).toBe(expected)
  })

  it.each([['abc'], [''], [true], [null], [{}], ['1e26'], ['0.0000000000001'], [Number.NaN]])('%j is not storable', (v) => {
    expect(numericValue(v)).toBeUndefined()
  })
})

describe('resolveUsage', () => {
  it('COUNT: 1 per matching event, with the group value', () => {
    expect(resolveUsage(meter({ type: 'COUNT', groupBy: 'region' }), event({ region: 'eu' }))).toEqual({ row: { meterId: 'm', revision: 3, value: '1', groupValue: 'eu', uniqueValue: '' } })
    expect(resolveUsage(meter({ type: 'COUNT', groupBy: 'region' }), event({}))).toEqual({ row: { meterId: 'm', revision: 3, value: '1', groupValue: '', uniqueValue: '' } })
  })

  it('COUNT_UNIQUE keeps the field text', () => {
    expect(resolveUsage(meter({ type: 'COUNT_UNIQUE', field: 'user' }), event({ user: 42 }))).toMatchObject({ row: { value: '1', uniqueValue: '42' } })
    expect(resolveUsage(meter({ type: 'COUNT_UNIQUE', field: 'user' }), event({}))).toEqual({ skip: 'property user is missing' })
  })

  it('value aggregations take the exact number and skip events without one', () => {
    const sum = meter({ type: 'SUM', field: 'tokens' })
    expect(resolveUsage(sum, event({ tokens: '0.000000000001' }))).toMatchObject({ row: { value: '0.000000000001' } })
    expect(resolveUsage(sum, event({}))).toEqual({ skip: 'property tokens is missing' })
    expect(resolveUsage(sum, event({ tokens: 'lots' }))).toEqual({ skip: 'property tokens is not a number with at most 12 decimal places below 1e26' })
    expect(resolveUsage(sum, event({ tokens: 1 }, 'other'))).toBeUndefined()
  })

  it('resolveEvent gives one row per matching meter and lists the skips', () => {
    const meters = [meter({ type: 'COUNT' }), { ...meter({ type: 'MAX', field: 'v' }), id: 'm2' }, { ...meter({ type: 'COUNT' }), id: 'm3', eventName: 'x' }]
    expect(resolveEvent(meters, event({ v: 'n/a' }))).toEqual({
      rows: [{ meterId: 'm', revision: 3, value: '1', groupValue: '', uniqueValue: '' }],
      skipped: [{ meterId: 'm2', reason: 'property v is not a number with at most 12 decimal places below 1e26' }],
    })
  })
})
