// Direct mode's own inserter runs the dedup filter: it fills a generation at start, and a resent event is looked up
// through it (aggregator/dedup-filter.test.ts tests the filter itself).
import { describe, expect, it } from 'vitest'
import { startHarness } from '../test/harness.ts'

describe("the program's inserter", () => {
  it('fills a generation at start, and a resent event found through it is a duplicate', async () => {
    const h = await startHarness({ env: { KAFKA_BROKERS: '' } })
    try {
      const marked = async () => (await (await h.running.deps.ch.client.query({ query: 'SELECT count() AS n FROM event_id_seen_generations', format: 'JSONEachRow' })).json<{ n: string }>())[0].n
      for (let waited = 0; (await marked()) === '0' && waited < 20_000; waited += 50) await new Promise((r) => setTimeout(r, 50))
      expect(await marked()).toBe('1')
      const event = { event_name: 'call', external_customer_id: 'c', event_id: 'resent-1', properties: { v: 1 } }
      expect((await h.http('POST', '/v1/events', { body: event })).status).toBe(202)
      expect((await h.http('POST', '/v1/events', { body: { ...event, properties: { v: 2 } } })).status).toBe(202)
      expect((await h.http('GET', '/v1/events/lookup?event_id=resent-1')).body).toMatchObject({ status: 'duplicate', event: { id: 'resent-1', properties: { v: 1 } } })
      const { tenantId, environments } = h.tenant
      const hit = await h.running.deps.ch.client.query({ query: `SELECT sipHash64('${tenantId}', '${environments.production}', 'resent-1') IN event_id_seen_1 AS hit`, format: 'JSONEachRow' })
      expect((await hit.json<{ hit: number }>())[0].hit).toBe(1)
    } finally {
      await h.stop()
    }
  })
})
