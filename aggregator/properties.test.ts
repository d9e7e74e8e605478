// The insert gives ClickHouse each event's properties as a JSON object, stored as its text
// (input_format_json_read_objects_as_strings): the stored text must be exactly JSON.stringify's, whatever
// the properties hold, and read back equal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'

let h: Harness
beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '' } })
})
afterAll(() => h?.stop())

describe('event properties', () => {
  it('are stored as the exact JSON text of the accepted object', async () => {
    const properties = {
      quote: 'say "hi"\\ then\ttab\nnewline',
      unicode: 'é 😀 \u2028 \u001f',
      nested: { list: [1, -2.5, 'x', null, true, { deep: [] }], empty: {} },
      number: 123.456,
      '}': '{',
    }
    const res = await h.http('POST', '/v1/events', { body: { event_id: 'props-1', event_name: 'p', external_customer_id: 'cust-props', properties } })
    expect(res.status).toBe(202)
    const list = (await h.http('GET', '/v1/events?external_customer_id=cust-props')).body
    expect(list.items.map((e: { properties: unknown }) => e.properties)).toEqual([properties])
    const rs = await h.running.deps.ch.client.query({ query: "SELECT properties FROM events WHERE id = 'props-1'", format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([{ properties: JSON.stringify(properties) }])
  })

  it('refuse NUL characters and lone surrogates, naming the property, and store nothing', async () => {
    for (const [name, value] of [['nul', 'a\u0000b'], ['lone', '\ud800']]) {
      const res = await h.http('POST', '/v1/events', { body: { event_id: `props-${name}`, event_name: 'p', external_customer_id: 'cust-props', properties: { [name]: value } } })
      expect([res.status, res.body.details]).toEqual([400, { [`properties.${name}`]: 'must not contain NUL characters or unpaired UTF-16 surrogates' }])
      expect((await h.http('GET', `/v1/events/lookup?event_id=props-${name}`)).status).toBe(404)
    }
  })
})
