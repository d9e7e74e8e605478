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
})
