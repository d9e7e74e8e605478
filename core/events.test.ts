import { describe, expect, it } from 'vitest'
import { decodeRecord, encodeEvent, normalizeEvent } from './events.ts'

const scope = { tenantId: 't1', environmentId: 'env1' }
const receivedAt = new Date('2024-06-01T12:00:00.000Z')
const opts = { receivedAt, maxFutureMs: 300_000, newId: () => 'generated' }

describe('normalizeEvent', () => {
  it('trims names, stamps scope and reception time, generates a missing id', () => {
    const n = normalizeEvent({ event_name: ' api.call\t', external_customer_id: '\n c1 ', properties: { a: 1 } }, scope, opts)
    expect(n).toEqual({
      ok: true,
      event: { id: 'generated', tenantId: 't1', environmentId: 'env1', eventName: 'api.call', externalCustomerId: 'c1', customerId: '', source: '', timestamp: receivedAt, receivedAt, properties: { a: 1 } },
    })
  })

  it('reports every bad field at once', () => {
    const n = normalizeEvent({ event_name: ' ', external_customer_id: '', event_id: '  ', timestamp: '2024-06-01T12:05:00.001Z' }, scope, opts)
    expect(n).toEqual({
      ok: false,
      errors: {
        event_name: 'must not be blank',
        external_customer_id: 'must not be blank',
        event_id: 'must not be blank',
        timestamp: 'must not be more than 300 seconds in the future',
      },
    })
  })

  it('accepts a timestamp exactly at the future limit and converts offsets to UTC', () => {
    const at = normalizeEvent({ event_name: 'e', external_customer_id: 'c', timestamp: '2024-06-01T14:05:00+02:00' }, scope, opts)
    expect(at.ok && at.event.timestamp.toISOString()).toBe('2024-06-01T12:05:00.000Z')
    const old = normalizeEvent({ event_name: 'e', external_customer_id: 'c', timestamp: '1969-12-31T23:59:59Z' }, scope, opts)
    expect(old).toEqual({ ok: false, errors: { timestamp: 'must not be before 1970-01-01T00:00:00Z' } })
  })

  it('refuses ids longer than 255 characters after trimming', () => {
    const n = normalizeEvent({ event_name: 'e', external_customer_id: 'c', event_id: ` ${'x'.repeat(256)} ` }, scope, opts)
    expect(n).toEqual({ ok: false, errors: { event_id: 'must be at most 255 characters' } })
  })
})

describe('wire form', () => {
  it('round-trips an event, alone or with others of its key', () => {
    const n = normalizeEvent({ event_name: 'e', external_customer_id: 'c', source: 's', customer_id: 'cus_1', properties: { big: '123456789012345678901' } }, scope, opts)
    if (!n.ok) throw new Error('invalid')
    expect(decodeRecord(encodeEvent(n.event))).toEqual([{ ok: true, event: n.event }])
    const other = { ...n.event, id: 'second' }
    expect(decodeRecord(`[${encodeEvent(n.event)},${encodeEvent(other)}]`)).toEqual([{ ok: true, event: n.event }, { ok: true, event: other }])
  })

  it('keeps the good events of a record and names the bad one', () => {
    const n = normalizeEvent({ event_name: 'e', external_customer_id: 'c' }, scope, opts)
    if (!n.ok) throw new Error('invalid')
    const text = `[${encodeEvent(n.event)},{"id":"x"}]`
    expect(decodeRecord(text)).toEqual([{ ok: true, event: n.event }, { ok: false, reason: 'tenant_id is missing', raw: { id: 'x' } }])
  })

  it.each([
    ['{', 'not JSON'],
    ['[1]', 'not a JSON object'],
    ['{"id":"x"}', 'tenant_id is missing'],
    ['{"id":"x","tenant_id":"t","environment_id":"e","event_name":"n","external_customer_id":"c","timestamp":"soon","received_at":"2024-01-01T00:00:00Z"}', 'timestamp is not a date-time between 1970 and 2200'],
    ['{"id":"x","tenant_id":"t","environment_id":"e","event_name":"n","external_customer_id":"c","timestamp":"2300-01-01T00:00:00Z","received_at":"2024-01-01T00:00:00Z"}', 'timestamp is not a date-time between 1970 and 2200'],
    ['{"id":"x","tenant_id":"t","environment_id":"e","event_name":"n","external_customer_id":"c","timestamp":"2024-01-01T00:00:00Z","received_at":"2024-01-01T00:00:00Z","properties":[]}', 'properties is not an object'],
  ])('rejects %s: %s', (text, reason) => {
    expect(decodeRecord(text)).toMatchObject([{ ok: false, reason }])
  })
})
