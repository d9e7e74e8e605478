// The shortcuts of intake's hot path against what they stand in for: the fast event check never accepts what ajv
// refuses, and the patched kafkajs CRC-32C (patches/) gives the checksums of the plain one.
import { createRequire } from 'node:module'
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { validateBody } from '../core/validate.ts'
import { eventSchema, plainEvent } from './schema.ts'

const ajvAccepts = (raw: unknown): boolean => {
  try {
    validateBody(eventSchema, raw)
    return true
  } catch {
    return false
  }
}

const good = { event_name: 'api.call', external_customer_id: 'cust-1' }
const long = (n: number) => 'x'.repeat(n)

describe('the fast event check', () => {
  it.each([
    ['the two required fields', good],
    ['every field', { ...good, event_id: 'e1', customer_id: 'cus_1', source: 'sdk', timestamp: '2024-03-10T12:30:45.123Z', properties: { n: 1, s: 'x', o: {} } }],
    ['an offset timestamp', { ...good, timestamp: '2024-03-10T12:30:45+05:30' }],
    ['names at their length limit', { ...good, event_name: long(319), event_id: long(319), customer_id: long(255), source: long(255) }],
  ])('accepts %s, as ajv does', (_, raw) => {
    expect(plainEvent(raw)).toBe(true)
    expect(ajvAccepts(raw)).toBe(true)
  })

  it.each([
    ['null', null],
    ['an array', [good]],
    ['a string', 'event'],
    ['no event_name', { external_customer_id: 'c' }],
    ['no external_customer_id', { event_name: 'e' }],
    ['a numeric event_name', { ...good, event_name: 5 }],
    ['a null customer id', { ...good, external_customer_id: null }],
    ['an unknown field', { ...good, tenant_id: 't' }],
    ['an event_name too long', { ...good, event_name: long(320) }],
    ['a customer_id too long', { ...good, customer_id: long(256) }],
    ['a source too long', { ...good, source: long(256) }],
    ['an array of properties', { ...good, properties: [1] }],
    ['null properties', { ...good, properties: null }],
    ['string properties', { ...good, properties: '{}' }],
    ['a bad timestamp', { ...good, timestamp: 'yesterday' }],
    ['a timestamp without a zone', { ...good, timestamp: '2024-03-10T12:30:45' }],
    ['February 30th', { ...good, timestamp: '2024-02-30T00:00:00Z' }],
    ['a numeric timestamp', { ...good, timestamp: 1710000000000 }],
    ['a leap second, which no Date can hold', { ...good, timestamp: '2016-12-31T23:59:60Z' }],
  ])('leaves %s to ajv, which refuses it', (_, raw) => {
    expect(plainEvent(raw)).toBe(false)
    expect(ajvAccepts(raw)).toBe(false)
  })

  it.each([
    ['a lower-case t', { ...good, timestamp: '2024-03-10t12:30:45Z' }],
    ['an offset without colon', { ...good, timestamp: '2024-03-10T12:30:45+0530' }],
    ['a name of 319 astral characters (638 UTF-16 units)', { ...good, event_name: '😀'.repeat(319) }],
  ])('leaves %s to ajv, which accepts it', (_, raw) => {
    expect(plainEvent(raw)).toBe(false)
    expect(ajvAccepts(raw)).toBe(true)
  })

  it('never accepts what ajv refuses over 5,000 generated events', () => {
    let seed = 7
    const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32)
    const values = ['ok', '', ' ', long(255), long(256), long(319), long(320), 1, null, true, {}, [], '2024-03-10T12:30:45Z', '2024-02-30T00:00:00Z', '2024-03-10T12:30:45', { n: 1 }]
    const fields = ['event_name', 'external_customer_id', 'event_id', 'customer_id', 'timestamp', 'source', 'properties', 'extra']
    let accepted = 0
    for (let i = 0; i < 5000; i++) {
      const raw: Record<string, unknown> = {}
      for (const f of fields) if (random() < 0.7) raw[f] = values[Math.floor(random() * values.length)]
      if (plainEvent(raw)) {
        accepted++
        expect(ajvAccepts(raw), JSON.stringify(raw)).toBe(true)
      }
    }
    expect(accepted).toBeGreaterThan(0)
  })
})

describe('kafkajs CRC-32C (patched to slicing-by-8)', () => {
  const crc32C = createRequire(import.meta.url)('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number
  // CRC-32C one bit at a time, straight from its definition (reflected polynomial 0x82f63b78).
  const bitwise = (b: Buffer): number => {
    let crc = ~0
    for (const byte of b) {
      crc ^= byte
      for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1
    }
    return ~crc >>> 0
  }

  it('gives the standard check value and the bitwise checksum at every length and alignment', () => {
    expect(crc32C(Buffer.from('123456789'))).toBe(0xe3069283)
    const bytes = randomBytes(4096)
    for (let length = 0; length <= 100; length++) {
      for (const start of [0, 1, 3, 7]) {
        const b = bytes.subarray(start, start + length)
        expect(crc32C(b), `${start}+${length}`).toBe(bitwise(b))
      }
    }
    expect(crc32C(bytes)).toBe(bitwise(bytes))
  })
})
