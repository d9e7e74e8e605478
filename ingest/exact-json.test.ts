import { describe, expect, it } from 'vitest'
import { exactJson } from './exact-json.ts'

describe('exactJson', () => {
  it('keeps the parsed body when no number can lose digits', () => {
    const parsed = { a: 1.5 }
    expect(exactJson('{"a":1.5}', parsed)).toBe(parsed)
  })

  it('keeps numbers beyond double precision as decimal strings, safe ones as numbers', () => {
    const raw = '{"big":12345678901234567890.123456789,"small":0.1,"exp":1e400,"id":"1234567890123456789"}'
    expect(exactJson(raw, JSON.parse(raw))).toEqual({ big: '12345678901234567890.123456789', small: 0.1, exp: '1e400', id: '1234567890123456789' })
  })

  it.each([
    ['a long integer', '{"a":12345678901234567}', { a: '12345678901234567' }],
    ['a long fraction in an array', '{"a":[1,1234567890.123456789]}', { a: [1, '1234567890.123456789'] }],
    ['an exponent after whitespace', '{"a":\n -1e5}', { a: -100000 }],
    ['an upper-case exponent', '{"a":1.5E3}', { a: 1500 }],
    ['leading zeros of a tiny number', '{"a":0.0000000000000001}', { a: 1e-16 }],
  ])('reads a body with %s losslessly', (_, raw, expected) => {
    const parsed = JSON.parse(raw)
    const exact = exactJson(raw, parsed)
    expect(exact).toEqual(expected)
    expect(exact).not.toBe(parsed)
  })

  it('keeps the fast parse when long digit runs are only inside strings', () => {
    const raw = '{"id":"1234567890123456789","at":"2024-03-10T12:30:45.123456789Z","n":123456789012345}'
    const parsed = JSON.parse(raw)
    expect(exactJson(raw, parsed)).toBe(parsed)
  })
})
