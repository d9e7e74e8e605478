import { describe, expect, it } from 'vitest'
import { decodeRecord, encodeEvent, isoInstant, normalizeEvent, parseInstant, simpleInstant, type UsageEvent } from './events.ts'

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

  it("carries the request's receipt, and reads none where a record has no whole positive one", () => {
    const n = normalizeEvent({ event_name: 'e', external_customer_id: 'c' }, scope, { ...opts, receipt: 2 ** 48 - 1 })
    if (!n.ok) throw new Error('invalid')
    expect(n.event.receipt).toBe(2 ** 48 - 1)
    expect(JSON.parse(encodeEvent(n.event)).receipt).toBe(2 ** 48 - 1)
    expect(decodeRecord(encodeEvent(n.event))).toEqual([{ ok: true, event: n.event }])
    for (const receipt of [0, -3, 1.5, '7', null]) {
      const [d] = decodeRecord(JSON.stringify({ ...JSON.parse(encodeEvent(n.event)), receipt }))
      expect(d.ok && d.event.receipt).toBeUndefined()
    }
  })

  it('keeps the good events of a record and names the bad one', () => {
    const n = normalizeEvent({ event_name: 'e', external_customer_id: 'c' }, scope, opts)
    if (!n.ok) throw new Error('invalid')
    const text = `[${encodeEvent(n.event)},{"id":"x"}]`
    expect(decodeRecord(text)).toEqual([{ ok: true, event: n.event }, { ok: false, reason: 'tenant_id is missing', raw: { id: 'x' } }])
  })

  it("reads each element's own instants, whether or not the one before shared them", () => {
    const wire = (timestamp: unknown, received_at: unknown) => ({ id: 'x', tenant_id: 't', environment_id: 'e', event_name: 'n', external_customer_id: 'c', timestamp, received_at })
    const [a, b] = ['2024-01-01T00:00:00.001Z', '2024-01-02T00:00:00+01:00']
    const elements = [wire(a, a), wire(a, b), wire(b, b), wire('soon', b), wire(b, 'soon'), wire(b, b), wire(a, 7), wire(7, a), wire(undefined, a), wire(a, a)]
    const decoded = decodeRecord(JSON.stringify(elements))
    const instants = (d: (typeof decoded)[number]) => (d.ok ? [d.event.timestamp.getTime(), d.event.receivedAt.getTime()] : d.reason)
    const [ta, tb] = [Date.parse(a), Date.parse(b)]
    const [badTimestamp, badReceived] = ['timestamp is not a date-time between 1970 and 2200', 'received_at is not a date-time between 1970 and 2200']
    expect(decoded.map(instants)).toEqual([[ta, ta], [ta, tb], [tb, tb], badTimestamp, badReceived, [tb, tb], badReceived, badTimestamp, badTimestamp, [ta, ta]])
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

describe('instants read and written by hand', () => {
  // A fixed-seed generator: the same cases on every run.
  let seed = 42
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32)
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]

  it.each([
    ['2024-03-10T12:30:45.123Z', Date.UTC(2024, 2, 10, 12, 30, 45, 123)],
    ['2024-03-10T12:30:45Z', Date.UTC(2024, 2, 10, 12, 30, 45)],
    ['2024-03-10T12:30:45.5+02:00', Date.UTC(2024, 2, 10, 10, 30, 45, 500)],
    ['2024-03-10T00:30:45.98765-05:30', Date.UTC(2024, 2, 10, 6, 0, 45, 987)],
    ['2024-02-29T23:59:59.999Z', Date.UTC(2024, 1, 29, 23, 59, 59, 999)],
  ])('reads %s as Date.parse does', (text, ms) => {
    expect(simpleInstant(text)).toBe(ms)
    expect(Date.parse(text)).toBe(ms)
  })

  it.each([
    '2023-02-29T00:00:00Z', '1900-02-29T00:00:00Z', '2024-04-31T00:00:00Z', '2024-13-01T00:00:00Z', '2024-00-10T00:00:00Z',
    '2024-01-01T24:00:00Z', '2024-01-01T23:60:00Z', '2024-06-30T23:59:60Z', '2024-01-01t00:00:00Z', '2024-01-01T00:00:00z',
    '2024-01-01 00:00:00Z', '2024-01-01T00:00:00', '2024-01-01T00:00:00.Z', '2024-01-01T00:00:00+0100', '2024-01-01T00:00:00+01',
    '2024-01-01T00:00:00+24:00', '2024-01-01T00:00:00+01:60', '0999-01-01T00:00:00Z', '+02024-01-01T00:00:00Z', '2024-1-01T00:00:00Z',
    '2024-01-01T00:00:00Zx', '２０２４-01-01T00:00:00Z', '',
  ])('leaves %j to Date.parse', (text) => {
    expect(simpleInstant(text)).toBeNaN()
    expect(Object.is(parseInstant(text), Date.parse(text))).toBe(true)
  })

  it('agrees with Date.parse on 20,000 generated instants in every offset form', () => {
    for (let i = 0; i < 20_000; i++) {
      const base = new Date(Math.floor(random() * Date.UTC(2200, 0, 1))).toISOString().slice(0, 19)
      const fraction = pick(['', '.1', '.12', '.123', '.1234', '.999999'])
      const zone = pick(['Z', '+00:00', '-00:00', '+05:30', '-11:45', '+23:59'])
      const text = `${base}${fraction}${zone}`
      expect(simpleInstant(text), text).toBe(Date.parse(text))
    }
  })

  it('writes what toISOString writes, from 1970 to 9999 and beyond', () => {
    for (const ms of [0, 1, 999, 86_399_999, 951_782_400_000, 4_107_542_400_000, 253_402_300_799_999, -1, -62_198_755_200_000, 253_402_300_800_000]) {
      expect(isoInstant(ms)).toBe(new Date(ms).toISOString())
    }
    for (let i = 0; i < 20_000; i++) {
      const ms = Math.floor(random() * 253_402_300_800_000)
      expect(isoInstant(ms)).toBe(new Date(ms).toISOString())
    }
    expect(() => isoInstant(Number.NaN)).toThrow(RangeError)
  })

  it('encodes events to the same text as JSON.stringify with toISOString, whatever their strings hold', () => {
    const strings = ['plain', '', 'quote " and \\ backslash', 'tab\tnew\nline\u0001', 'ünïcødé', '😀 pair', '\ud800 lone', '</script>']
    for (let i = 0; i < 200; i++) {
      const e: UsageEvent = {
        id: pick(strings),
        tenantId: 't1',
        environmentId: pick(strings),
        eventName: pick(strings),
        externalCustomerId: pick(strings),
        customerId: pick(strings),
        source: pick(strings),
        timestamp: new Date(Math.floor(random() * 4_102_444_800_000)),
        receivedAt: new Date(Math.floor(random() * 4_102_444_800_000)),
        properties: { [pick(strings)]: pick([1, 1.5, '12345678901234567890.5', true, null, { nested: pick(strings) }]) },
      }
      const expected = JSON.stringify({
        id: e.id,
        tenant_id: e.tenantId,
        environment_id: e.environmentId,
        event_name: e.eventName,
        external_customer_id: e.externalCustomerId,
        customer_id: e.customerId,
        source: e.source,
        timestamp: e.timestamp.toISOString(),
        received_at: e.receivedAt.toISOString(),
        properties: e.properties,
      })
      expect(encodeEvent(e)).toBe(expected)
    }
  })
})
