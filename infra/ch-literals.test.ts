import { describe, expect, it } from 'vitest'
import { sqlDateTimeArray, sqlString, sqlStringArray } from './ch-literals.ts'

describe('ClickHouse literals', () => {
  it('escapes quotes and backslashes and nothing else', () => {
    expect(sqlString("it's a \\ test")).toBe("'it\\'s a \\\\ test'")
    expect(sqlString("'); DROP TABLE events; --")).toBe("'\\'); DROP TABLE events; --'")
    expect(sqlStringArray(['a', "b'"])).toBe("['a','b\\'']")
  })

  it('writes instants as UTC DateTime64(3)', () => {
    expect(sqlDateTimeArray([new Date('2024-03-01T10:00:00.123Z')])).toBe("[toDateTime64('2024-03-01 10:00:00.123', 3, 'UTC')]")
  })
})
