import { describe, expect, it } from 'vitest'
import { compileExpression, ExpressionError, ExpressionSkip } from './meter-expression.ts'

const value = (text: string, properties: Record<string, unknown>) => compileExpression(text)(properties).toFixed()

describe('meter expressions', () => {
  it('weights output tokens three times: 1200 + 350 × 3 = 2250', () => {
    expect(value('properties.input_tokens + properties.output_tokens * 3', { input_tokens: 1200, output_tokens: 350 })).toBe('2250')
    expect(value('input_tokens + output_tokens * 3', { input_tokens: '1200', output_tokens: '350' })).toBe('2250')
  })

  it('computes with exact decimals: 0.1 + 0.2 = 0.3, 1.15 × 3 = 3.45', () => {
    expect(value('properties.a + properties.b', { a: 0.1, b: 0.2 })).toBe('0.3')
    expect(value('properties.gb * 3', { gb: '1.15' })).toBe('3.45')
    // A division keeps 12 places, half-even: 10 / 3 = 3.333333333333.
    expect(value('properties.n / 3', { n: 10 })).toBe('3.333333333333')
  })

  it('takes conditionals, comparisons, logic and the few functions: 10 + 1 + 2 + 2 + 1 + 2.35 = 18.35', () => {
    const text = 'properties.tier == "pro" ? properties.seconds * 2 : properties.seconds'
    expect(value(text, { tier: 'pro', seconds: 90 })).toBe('180')
    expect(value(text, { tier: 'free', seconds: 90 })).toBe('90')
    expect(value('properties.n > 100 && !properties.internal ? properties.n - 100 : 0', { n: 250, internal: false })).toBe('150')
    expect(value('max(properties.n, 10) + min(1, 2) + abs(-2) + ceil(1.2) + floor(1.8) + round(2.345, 2)', { n: 4 })).toBe('18.35')
    expect(value('properties["gpu hours"] * 60', { 'gpu hours': 1.5 })).toBe('90')
  })

  it('an event missing a property, or not giving a number, contributes no value', () => {
    const f = compileExpression('properties.a + properties.b')
    expect(() => f({ a: 1 })).toThrow(new ExpressionSkip('property b is missing'))
    expect(() => f({ a: 1, b: 'many' })).toThrow(ExpressionSkip)
    expect(() => compileExpression('properties.a / properties.b')({ a: 1, b: 0 })).toThrow(new ExpressionSkip('division by zero'))
    expect(() => compileExpression('properties.a > 1')({ a: 2 })).toThrow(new ExpressionSkip('the result is not a number'))
    expect(() => compileExpression('constructor + 1')({})).toThrow(new ExpressionSkip('property constructor is missing'))
  })

  it('refuses at compile time what is not an expression of properties: no code runs', () => {
    for (const text of [
      'process.exit(1)',
      'constructor.constructor("return process")()',
      'properties.a = 1',
      'this',
      '[1, 2]',
      'properties',
      'eval("1")',
      'properties.a +',
      'a; b',
      'properties.a.b',
      'x'.repeat(1001),
    ]) {
      expect(() => compileExpression(text), text).toThrow(ExpressionError)
    }
  })
})
