// The broker process itself dies (kill -9) while events stream through intake in Kafka mode with the
// aggregator running, and comes back on the same data directory. Clients retry their 503s with the same
// event ids; every event is counted exactly once, and the per-minute views agree with a raw recount.
// The broker is the test's own (test/kafka.ts ownBroker), never the shared one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { meterUsage } from '../domains/usage/queries/service.ts'
import { startHarness, type Harness } from '../test/harness.ts'
import { ownBroker } from '../test/kafka.ts'
import { readyMeter, usage } from '../test/usage-helpers.ts'

const broker = await ownBroker()
const RANGE = { start_time: '2024-07-01T00:00:00Z', end_time: '2024-08-01T00:00:00Z' }
const REQUESTS = 30
const PER_REQUEST = 100
const N = REQUESTS * PER_REQUEST
// Event k carries n = k % 11: the 3000 events sum to 272 × 55 + (0 + 1 + … + 7) = 14988.
const SUM = Array.from({ length: N }, (_, k) => k % 11).reduce((a, b) => a + b, 0)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.skipIf(!broker)('a broker killed and restarted mid-stream', () => {
  let h: Harness
  let count: string
  let sum: string
  beforeAll(async () => {
    const topic = `usage-events-restart-${process.pid}-${Date.now()}`
    h = await startHarness({ roles: ['api', 'ingest', 'aggregator'], env: { KAFKA_BROKERS: broker!.brokers, KAFKA_TOPIC: topic, METER_BACKFILL_SETTLE_SECONDS: '0' } })
    count = await readyMeter(h, { name: 'count', event_name: 'job', aggregation: { type: 'COUNT' } })
    sum = await readyMeter(h, { name: 'sum', event_name: 'job', aggregation: { type: 'SUM', field: 'n' } })
  }, 60_000)
  afterAll(async () => {
    await h?.stop()
    await broker?.stop()
  })

  const total = async (meter: string) => (await usage(h, { meter_id: meter, ...RANGE })).value

  it('stores every event exactly once', async () => {
    let unavailable = 0
    /** One request, resent with the same event ids until intake acknowledges it, as an SDK does. */
    const send = async (r: number): Promise<void> => {
      const events = Array.from({ length: PER_REQUEST }, (_, i) => {
        const k = r * PER_REQUEST + i
        return { event_id: `e-${k}`, event_name: 'job', external_customer_id: `c${k % 10}`, timestamp: new Date(Date.UTC(2024, 6, 1 + (k % 28), k % 24, k % 60)).toISOString(), properties: { n: k % 11 } }
      })
      for (;;) {
        const res = await h.http('POST', '/v1/events/bulk', { body: { events } }).catch(() => undefined)
        if (res?.status === 202) return
        expect(res?.status ?? 503, JSON.stringify(res?.body)).toBe(503)
        unavailable++
        await sleep(200)
      }
    }
    let restarted: Promise<void> | undefined
    for (let r = 0; r < REQUESTS; r++) {
      await send(r)
      if (r === REQUESTS / 3) {
        broker!.kill()
        restarted = sleep(1000).then(() => broker!.start())
      }
    }
    await restarted
    expect(unavailable).toBeGreaterThan(0)

    const deadline = Date.now() + 60_000
    while ((await total(count)) !== String(N) && Date.now() < deadline) await sleep(250)
    expect(await total(count)).toBe(String(N))
    expect(await total(sum)).toBe(String(SUM))
    // Nothing late: a replay after the restart would show up as more than N.
    await sleep(2000)
    expect([await total(count), await total(sum)]).toEqual([String(N), String(SUM)])

    const scope = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production }
    for (const meterId of [count, sum]) {
      const q = { meterId, start: new Date(RANGE.start_time), end: new Date(RANGE.end_time), windowSize: 'DAY' as const }
      const [views, raw] = await Promise.all([meterUsage(h.running.deps, scope, q), meterUsage(h.running.deps, scope, { ...q, source: 'raw' })])
      expect(views.results.map((w) => w.value.toFixed())).toEqual(raw.results.map((w) => w.value.toFixed()))
    }
  }, 120_000)
})
