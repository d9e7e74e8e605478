// Direct mode's log inserter pipelines its batches: one is prepared (its ids looked up) while the one before it is
// inserted, taking that one's ids as stored. With one request's line a batch, repeats across requests sent back to
// back are each counted once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventLogOf } from '../infra/event-log.ts'
import { startHarness, type Harness } from '../test/harness.ts'
import { readyMeter, usage } from '../test/usage-helpers.ts'

let h: Harness
let meter: string
beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', AGGREGATOR_MAX_ROWS: '1', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  meter = await readyMeter(h, { name: 'jobs', event_name: 'job', aggregation: { type: 'SUM', field: 'n' } })
})
afterAll(() => h?.stop())

const event = (id: string, n: number) => ({ event_id: id, event_name: 'job', external_customer_id: 'pipe', timestamp: '2024-09-02T00:00:00Z', properties: { n } })

describe('the event log inserter', () => {
  it('counts an id repeated in the next batches once, while the batch holding it is being inserted', async () => {
    // 30 requests in flight at once, each a batch of its own, each repeating the ids of the two before it.
    const sent = await Promise.all(
      Array.from({ length: 30 }, (_, i) => h.http('POST', '/v1/events/bulk', { body: { events: [i, i - 1, i - 2].filter((k) => k >= 0).map((k) => event(`p-${k}`, k + 1)) } })),
    )
    expect(sent.map((r) => r.status)).toEqual(Array(30).fill(202))
    expect(await eventLogOf(h.running.deps)!.settled(30_000)).toBe(true)
    // 1 + 2 + … + 30 = 465, each id once.
    const total = await usage(h, { meter_id: meter, start_time: '2024-09-01T00:00:00Z', end_time: '2024-10-01T00:00:00Z' })
    expect(total.value).toBe('465')
    const rs = await h.running.deps.ch.client.query({ query: "SELECT count() AS n FROM events WHERE startsWith(id, 'p-')", format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([{ n: '30' }])
  })
})
