import { describe, expect, it } from 'vitest'
import { csvRecordCounter, formatBytes, progressLine } from './export-progress.ts'

describe('export progress', () => {
  it('counts records across pieces, not line breaks inside quoted cells', () => {
    const c = csvRecordCounter()
    // header; a row whose cell holds CRLF and a doubled quote; a plain row; the second row split mid-cell.
    for (const piece of ['id,note\r\n1,"a\r\nb ""c', '"" d"\r\n2,', 'plain\r\n']) c.add(piece)
    expect(c.records).toBe(3)
  })

  it('writes bytes in decimal units and the rate from the elapsed time', () => {
    expect([formatBytes(0), formatBytes(999), formatBytes(1000), formatBytes(1_549_999), formatBytes(2_000_000_000)]).toEqual(['0 B', '999 B', '1.0 KB', '1.5 MB', '2.0 GB'])
    // 12,345 rows in 2 s: 6,172.5 rows/s, rounded half up.
    expect(progressLine(12_345, 1_234_567, 2000)).toBe('12,345 rows · 1.2 MB · 6,173 rows/s')
    expect(progressLine(0, 0, 0)).toBe('0 rows · 0 B · 0 rows/s')
  })
})
