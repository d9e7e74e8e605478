// batchLine quotes strings by hand where JSON needs no escape: every line must still be the JSON of its row,
// whatever the strings hold (quotes, backslashes, control characters, DEL, non-ASCII, lone surrogates), and
// the strings it keeps from the previous line (scope, name, source, meter) must not leak into the next.
import { describe, expect, it } from 'vitest'
import type { UsageEvent } from '../core/events.ts'
import { batchLine, expiresText, quote, type Outcome } from './store.ts'

const ODD = ['', 'plain-id_1.2:3', 'a"b', 'a\\b', 'tab\there', 'line\nbreak', '\u0000', '\u001f', '\u007f', 'é', '😀', '\ud800', 'x\u2028y', ' ~!#$%&()*+,-./09:;<=>?@AZ[]^_`az{|}']
const expires = expiresText(new Date('2024-08-01T00:00:00.000Z'))
const at = new Date('2024-07-01T10:00:00.123Z')

describe('quote', () => {
  it('writes what JSON.stringify writes', () => {
    for (const s of ODD) expect(quote(s)).toBe(JSON.stringify(s))
  })
})

describe('batchLine', () => {
  it('is the JSON of its row for every string, line after line', () => {
    const pick = (i: number) => ODD[i % ODD.length]
    for (let i = 0; i < 400; i++) {
      const event: UsageEvent = {
        id: `${pick(i)}-${i}`,
        tenantId: pick(i >> 1),
        environmentId: pick(i >> 2),
        eventName: pick(i >> 3),
        externalCustomerId: pick(i + 3),
        customerId: pick(i >> 4),
        source: pick(i + 7),
        timestamp: at,
        receivedAt: at,
        properties: { [pick(i)]: pick(i + 1) },
        receipt: i + 1,
      }
      const row = { meterId: pick(i >> 1), revision: 2, value: '12.5', groupValue: pick(i + 5), uniqueValue: pick(i + 9) }
      const head = [event.tenantId, event.environmentId, event.id, event.externalCustomerId, event.customerId, event.eventName, event.source, at.getTime(), at.getTime()]
      const stored: Outcome = { kind: 'stored', event, rows: [row, { ...row, meterId: pick(i + 2) }] }
      expect(JSON.parse(batchLine(stored, expires))).toEqual([
        'stored', ...head, event.properties, '', JSON.parse(expires),
        [row.meterId, pick(i + 2)], [2, 2], ['12.5', '12.5'], [row.groupValue, row.groupValue], [row.uniqueValue, row.uniqueValue], i + 1,
      ])
      const one: Outcome = { kind: 'stored', event, rows: [row] }
      expect(JSON.parse(batchLine(one, expires)).slice(-6)).toEqual([[row.meterId], [2], ['12.5'], [row.groupValue], [row.uniqueValue], i + 1])
      const duplicate: Outcome = { kind: 'duplicate', event, reason: pick(i + 11) }
      expect(JSON.parse(batchLine(duplicate, expires))).toEqual(['duplicate', ...head, '', pick(i + 11), JSON.parse(expires), [], [], [], [], [], i + 1])
    }
  })
})
