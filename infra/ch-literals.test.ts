import { describe, expect, it } from 'vitest'
import { inlineParams, sqlDateTimeArray, sqlString, sqlStringArray } from './ch-literals.ts'

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

describe('inlined query parameters', () => {
  it('writes each placeholder as a literal of its type', () => {
    const sql = "SELECT * FROM t WHERE a = {a:String} AND n >= {n:Int64} AND t < {t:DateTime64(3, 'UTC')} AND s IN {s:Array(String)} AND d NOT IN {d:Array(DateTime64(3, 'UTC'))}"
    expect(inlineParams(sql, { a: "it's", n: 1709251200000, t: '2024-03-01 00:00:00.000', s: ['x', "y'"], d: ['2024-03-02 00:00:00.000'] })).toBe(
      "SELECT * FROM t WHERE a = 'it\\'s' AND n >= 1709251200000 AND t < CAST('2024-03-01 00:00:00.000' AS DateTime64(3, 'UTC')) AND s IN CAST(['x','y\\''] AS Array(String)) AND d NOT IN CAST(['2024-03-02 00:00:00.000'] AS Array(DateTime64(3, 'UTC')))",
    )
  })

  it('leaves placeholders inside string literals, quoted identifiers and comments alone', () => {
    const sql = "SELECT '{a:String}', 'it\\'s {a:String}', `{a:String}` -- {a:String}\n, {a:String} /* {a:String} */"
    expect(inlineParams(sql, { a: 'v' })).toBe("SELECT '{a:String}', 'it\\'s {a:String}', `{a:String}` -- {a:String}\n, 'v' /* {a:String} */")
  })

  it('refuses a missing value, a non-integer for an integer type and a non-string for String', () => {
    expect(() => inlineParams('SELECT {a:String}', {})).toThrow(/query parameter a/)
    expect(() => inlineParams('SELECT {n:UInt64}', { n: '1; DROP TABLE t' })).toThrow(TypeError)
    expect(() => inlineParams('SELECT {a:String}', { a: 1 })).toThrow(TypeError)
  })
})
