import { describe, expect, it } from 'vitest'
import { CsvReader, csvRecord, LineReader } from './csv-read.ts'

const readAll = (pieces: string[]): string[][] => {
  const r = new CsvReader()
  return [...pieces.flatMap((p) => r.push(p)), ...r.end()]
}

describe('CsvReader', () => {
  it('reads quoted cells with commas, doubled quotes and line breaks, CRLF rows, a BOM and a missing last line break', () => {
    const text = '\ufeffid,name\r\n1,"Acme, Inc."\r\n2,"say ""hi"""\r\n3,"two\nlines"\n\n4,'
    const rows = [['id', 'name'], ['1', 'Acme, Inc.'], ['2', 'say "hi"'], ['3', 'two\nlines'], ['4', '']]
    expect(readAll([text])).toEqual(rows)
    // The same text cut anywhere, even inside a doubled quote or a CRLF, reads the same.
    for (let cut = 1; cut < text.length; cut++) expect(readAll([text.slice(0, cut), text.slice(cut)])).toEqual(rows)
  })

  it('refuses a file that ends inside a quoted cell', () => {
    const r = new CsvReader()
    r.push('a,"open')
    expect(() => r.end()).toThrow(/quoted/)
  })
})

describe('LineReader', () => {
  it('answers non-blank lines whatever the pieces', () => {
    const r = new LineReader()
    expect([...r.push('{"a":1}\n\n{"b"'), ...r.push(':2}\r\n{"c":3}'), ...r.end()]).toEqual(['{"a":1}', '{"b":2}\r', '{"c":3}'])
  })
})

describe('csvRecord', () => {
  it('nests dotted columns, reads JSON and integer columns, leaves empty cells out', () => {
    const header = ['external_id', 'metadata.tier', 'metadata.region', 'tiers', 'count', 'name']
    expect(csvRecord(header, ['c1', 'gold', '', '[{"up_to":1}]', '12', ''], { tiers: 'json', count: 'integer' })).toEqual({
      value: { external_id: 'c1', metadata: { tier: 'gold' }, tiers: [{ up_to: 1 }], count: 12 },
      errors: {},
    })
  })

  it('names a JSON cell that does not parse and a row with more cells than the header', () => {
    expect(csvRecord(['a', 'b'], ['{', 'x', 'y'], { a: 'json' }).errors).toEqual({ a: 'must be JSON (an object or a list in one cell)', 'column 3': 'the row has 3 cells, the header 2 columns' })
  })
})
