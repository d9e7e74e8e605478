import { describe, expect, it } from 'vitest'
import { COUNTRY_CODES, countryCode } from './countries.ts'

describe('countryCode', () => {
  it('knows all 249 assigned codes', () => {
    expect(COUNTRY_CODES.size).toBe(249)
  })

  it.each([
    ['DE', 'DE'],
    ['us', 'US'],
    [' gb ', 'GB'],
    ['AX', 'AX'],
    ['SS', 'SS'],
  ])('accepts %j as %s', (input, code) => {
    expect(countryCode(input)).toBe(code)
  })

  it.each(['UK', 'EU', 'XX', 'DEU', 'D', '', '12'])('refuses %j', (input) => {
    expect(countryCode(input)).toBeUndefined()
  })
})
