import { describe, expect, it } from 'vitest'
import { CREDIT_NOTE_NUMBER_TEMPLATE, formatNumber, INVOICE_NUMBER_TEMPLATE, numberScope } from './numbering.ts'

const MAY = new Date('2024-05-10T08:00:00Z')
const MAY_END = new Date('2024-05-31T23:30:00Z') // already 1 June in Tokyo (UTC+9)

describe('formatNumber', () => {
  it.each<[string, number, Date, string | undefined, string]>([
    [INVOICE_NUMBER_TEMPLATE, 1, MAY, undefined, 'INV-202405-00001'],
    [INVOICE_NUMBER_TEMPLATE, 12345, MAY, undefined, 'INV-202405-12345'],
    [INVOICE_NUMBER_TEMPLATE, 123456, MAY, undefined, 'INV-202405-123456'], // padded, never truncated
    [CREDIT_NOTE_NUMBER_TEMPLATE, 7, MAY, undefined, 'CN-202405-00007'],
    [INVOICE_NUMBER_TEMPLATE, 1, MAY_END, undefined, 'INV-202405-00001'],
    [INVOICE_NUMBER_TEMPLATE, 1, MAY_END, 'Asia/Tokyo', 'INV-202406-00001'],
    ['{YY}{MM}{DD}/{SEQ}', 42, MAY, undefined, '240510/42'],
    ['ACME-{SEQ:3}', 9, MAY, undefined, 'ACME-009'],
  ])('%s #%i at %s (%s) -> %s', (template, seq, date, zone, expected) => expect(formatNumber(template, seq, date, zone)).toBe(expected))

  it.each<[string, number, RegExp]>([
    ['INV-{YYYY}', 1, /exactly one \{SEQ\}/],
    ['{SEQ}-{SEQ:2}', 1, /exactly one \{SEQ\}/],
    ['INV-{FOO}-{SEQ}', 1, /unknown placeholder \{FOO\}/],
    ['INV-{MM:2}-{SEQ}', 1, /unknown placeholder \{MM:2\}/],
    ['INV-{SEQ:0}', 1, /1 ≤ n ≤ 20/],
    ['INV-{SEQ:21}', 1, /1 ≤ n ≤ 20/],
    [INVOICE_NUMBER_TEMPLATE, 0, /positive integer/],
    [INVOICE_NUMBER_TEMPLATE, 1.5, /positive integer/],
  ])('rejects %j #%s', (template, seq, message) => expect(() => formatNumber(template, seq, MAY)).toThrow(message))

  it('rejects an unknown time zone', () => expect(() => formatNumber(INVOICE_NUMBER_TEMPLATE, 1, MAY, 'Mars/Base')).toThrow(RangeError))
})

describe('numberScope: the sequence key', () => {
  it.each<[string, Date, string | undefined, string]>([
    [INVOICE_NUMBER_TEMPLATE, MAY, undefined, 'INV-202405-'], // a new sequence every month
    [INVOICE_NUMBER_TEMPLATE, MAY_END, 'Asia/Tokyo', 'INV-202406-'],
    [CREDIT_NOTE_NUMBER_TEMPLATE, MAY, undefined, 'CN-202405-'], // credit notes count apart from invoices
    ['ACME-{SEQ:3}', MAY, undefined, 'ACME-'], // no date: one sequence for ever
  ])('%s at %s (%s) -> %s', (template, date, zone, expected) => expect(numberScope(template, date, zone)).toBe(expected))
})
