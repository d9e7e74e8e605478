// Record identities: distinct for distinct records within the bounds, never 0 (unknown), exact as doubles.
import { describe, expect, it } from 'vitest'
import { kafkaRecord, logRecord } from './record-id.ts'

describe('record identities', () => {
  it('tell records of a partition and of partitions apart', () => {
    expect(kafkaRecord(0, '0')).toBe(1)
    expect(kafkaRecord(0, '41')).toBe(42)
    expect(kafkaRecord(1, 0n)).toBe(2 ** 40 + 1)
    expect(kafkaRecord(3, '7')).not.toBe(kafkaRecord(7, '3'))
    // The largest: partition 4095, offset 2^40 - 1; past the bounds identities wrap rather than lose precision.
    expect(kafkaRecord(4095, BigInt(2 ** 40 - 1))).toBe(2 ** 52)
    expect(kafkaRecord(4096, '5')).toBe(kafkaRecord(0, '5'))
  })

  it('tell event log lines of a segment and of segments apart', () => {
    expect(logRecord(0, 0)).toBe(1)
    expect(logRecord(0, 1234)).toBe(1235)
    expect(logRecord(2, 10)).toBe(2 * 2 ** 36 + 11)
    expect(logRecord(2 ** 16 - 1, 2 ** 36 - 1)).toBe(2 ** 52)
  })
})
