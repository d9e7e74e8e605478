import { describe, expect, it } from 'vitest'
import { csvCell, csvHeader, csvRow, csvWriter, quoteCsv } from './csv.ts'
import { D } from './money.ts'

describe('RFC 4180 quoting', () => {
  it.each([
    ['plain', 'plain'],
    ['', ''],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['"', '""""'],
    ['line\nbreak', '"line\nbreak"'],
    ['cr\rhere', '"cr\rhere"'],
    ['crlf\r\n', '"crlf\r\n"'],
    ['tab\tinside', 'tab\tinside'], // a tab inside a cell needs no quotes
    ['ünïcødé ✓', 'ünïcødé ✓'],
  ])('%j → %j', (text, cell) => expect(quoteCsv(text)).toBe(cell))
})

describe('formula injection in text cells', () => {
  it.each([
    ['=SUM(A1:A9)', "'=SUM(A1:A9)"],
    ['+1', "'+1"],
    ['-1', "'-1"], // a text column keeps a numeric-looking id as the text it was
    ['-12.5', "'-12.5"],
    ['@cmd', "'@cmd"],
    ['\t=1', "'\t=1"],
    ['\r=1', `"'\r=1"`], // neutralized, then quoted for its CR
    ['=HYPERLINK("http://x","y")', `"'=HYPERLINK(""http://x"",""y"")"`], // neutralized, then quoted for its quotes and comma
    ['-2+3+cmd|\' /C calc\'!A0', "'-2+3+cmd|' /C calc'!A0"],
    ['a=b', 'a=b'], // only the first character counts
    [' =1', ' =1'],
    ["'already", "'already"],
  ])('%j → %j', (text, cell) => expect(csvCell(text)).toBe(cell))
})

describe('numbers', () => {
  it.each([
    ['-12.5', '-12.5'],
    ['0', '0'],
    ['1000000.000001', '1000000.000001'],
    ['-0.5', '-0.5'],
    // Not plain decimals: text, neutralized when they could start a formula.
    ['+5', "'+5"],
    ['-1+2', "'-1+2"],
    ['=1', "'=1"],
    ['1e5', '1e5'],
    ['-1e5', "'-1e5"],
    ['.5', '.5'],
    ['-.5', "'-.5"],
    ['12,5', '"12,5"'],
  ])('a numeric column writes %j as %j', (text, cell) => expect(csvCell(text, 'number')).toBe(cell))

  it('writes Decimals, numbers and bigints as plain decimals in any column', () => {
    expect(csvCell(new D('-12.50'))).toBe('-12.5')
    expect(csvCell(new D('1e-7'))).toBe('0.0000001')
    expect(csvCell(new D('123456789012345678901234567890.123456789012'))).toBe('123456789012345678901234567890.123456789012')
    expect(csvCell(-12.5)).toBe('-12.5')
    expect(csvCell(1e-7)).toBe('0.0000001')
    expect(csvCell(1.5e21)).toBe('1500000000000000000000')
    expect(csvCell(-0)).toBe('0')
    expect(csvCell(42n)).toBe('42')
    expect(csvCell(-42n)).toBe('-42')
  })

  it('refuses what is not a finite number', () => {
    expect(() => csvCell(Number.NaN)).toThrow(RangeError)
    expect(() => csvCell(Number.POSITIVE_INFINITY)).toThrow(RangeError)
    expect(() => csvCell(new D(Infinity))).toThrow(RangeError)
  })

  it('writes null and undefined as empty cells, booleans as words', () => {
    expect([csvCell(null), csvCell(undefined), csvCell(true), csvCell(false)]).toEqual(['', '', 'true', 'false'])
  })
})

describe('rows', () => {
  it('joins cells with commas, each of its column kind, and ends with CRLF', () => {
    expect(csvRow(['cus_1', '-3', '-3', null, new D('2.50')], ['text', 'text', 'number', 'text', 'number'])).toBe("cus_1,'-3,-3,,2.5\r\n")
    expect(csvRow([])).toBe('\r\n')
    expect(csvRow(['a,"b"', 'c\nd'])).toBe('"a,""b""","c\nd"\r\n')
  })

  it('writes a header of names, neutralized like text', () => {
    expect(csvHeader([{ name: 'customer' }, { name: 'usage', kind: 'number' }, { name: '=evil' }, { name: 'a,b' }])).toBe("customer,usage,'=evil,\"a,b\"\r\n")
  })

  it('a writer knows its columns and refuses a row of another width', () => {
    const w = csvWriter([{ name: 'external_customer_id' }, { name: 'usage', kind: 'number' }, { name: 'cost', kind: 'number' }])
    expect(w.header).toBe('external_customer_id,usage,cost\r\n')
    expect(w.row(['-7', '-1.5', new D('10.00')])).toBe("'-7,-1.5,10\r\n")
    expect(w.row(['@x', '=1', 3])).toBe("'@x,'=1,3\r\n")
    expect(() => w.row(['only one'])).toThrow(RangeError)
  })
})
