// The usage reconciliation report, in direct mode and on a real broker (Kafka mode, the aggregator running): events
// sent with a duplicate, in Kafka mode a record the aggregator dead-letters, an invoice finalized, one late event;
// every number checked.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { customer, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { kafkaBrokers } from '../../../test/kafka.ts'
import { readyMeter } from '../../../test/usage-helpers.ts'

const brokers = await kafkaBrokers()
const topic = `usage-events-recon-${process.pid}-${Date.now()}`
let h: Harness

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

// The last whole month before now: the subscription's first billed period.
const now = new Date()
const month = (offset: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1))
const [periodStart, periodEnd] = [month(-1), month(0)]
const inPeriod = (day: number, hour = 0) => new Date(periodStart.getTime() + (day - 1) * 86_400_000 + hour * 3_600_000).toISOString()

const modes = [
  { mode: 'direct', kafka: false, skip: false },
  { mode: 'Kafka', kafka: true, skip: !brokers },
]

describe.each(modes)('usage reconciliation, $mode mode', ({ kafka, skip }) => {
  beforeAll(async () => {
    if (skip) return
    const env: Record<string, string> = kafka ? { KAFKA_BROKERS: brokers!, KAFKA_TOPIC: topic } : { KAFKA_BROKERS: '' }
    h = await startHarness({ roles: ['api', 'ingest', ...(kafka ? (['aggregator'] as const) : [])], env: { ...env, METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  })
  afterAll(async () => {
    await h?.stop()
  })

  it.skipIf(skip)('counts each event received, stored, dropped, rejected, corrected, counted, billed and unsettled', async () => {
    const calls = await readyMeter(h, { name: 'Calls', event_name: 'call', aggregation: { type: 'COUNT' } })
    const euCalls = await readyMeter(h, { name: 'EU calls', event_name: 'call', aggregation: { type: 'COUNT' }, filters: [{ key: 'region', values: ['eu'] }] })
    const p = await plan(h, { prices: [usagePrice(calls, '0.10', { display_name: 'Calls' })] })
    const cus = await customer(h)
    const sub = await h.http('POST', '/v1/subscriptions', { body: { customer_id: cus.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: periodStart.toISOString() } })
    expect(sub.status, JSON.stringify(sub.body)).toBe(201)
    const event = (id: string, at: string, region: string) => ({ event_id: id, event_name: 'call', external_customer_id: cus.external_id, timestamp: at, properties: { region } })
    // Three calls, two from the EU; c1 sent twice (the second copy is a duplicate).
    const sent = await h.http('POST', '/v1/events/bulk', { body: { events: [event('c1', inPeriod(5), 'eu'), event('c2', inPeriod(10), 'us'), event('c3', inPeriod(20), 'eu')] } })
    expect(sent.status).toBe(202)
    expect((await h.http('POST', '/v1/events', { body: event('c1', inPeriod(5), 'eu') })).status).toBe(202)
    // Kafka mode: a record intake would never write, properties that are not an object. The aggregator dead-letters it.
    const rejected = kafka ? 1 : 0
    if (kafka) {
      const producer = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING }).producer()
      await producer.connect()
      const bad = { id: 'bad-1', tenant_id: h.tenant.tenantId, environment_id: h.tenant.environments.production, external_customer_id: cus.external_id, event_name: 'call', timestamp: inPeriod(15), received_at: inPeriod(15), properties: 'oops' }
      await producer.send({ topic, messages: [{ key: 'k', value: JSON.stringify(bad) }] })
      await producer.disconnect()
    }

    const range = `start_time=${periodStart.toISOString()}&end_time=${periodEnd.toISOString()}`
    const report = async () => {
      const res = await h.http('GET', `/v1/customers/${cus.id}/usage/reconciliation?${range}`)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body as { external_customer_id: string; meters: Record<string, unknown>[] }
    }
    const byMeter = async () => Object.fromEntries((await report()).meters.map((m) => [m.meter_id, m]))
    await until('the aggregator wrote every record', async () => {
      const m = (await byMeter())[calls]
      return m !== undefined && m.received === 4 + rejected
    })

    // Nothing billed yet: the period's invoice is not there.
    expect((await byMeter())[calls]).toMatchObject({ received: 4 + rejected, stored: 3, duplicates: 1, rejected, counted: 3, billed: 0, billed_quantity: '0', invoices: [] })

    expect((await h.http('POST', '/v1/jobs/billing-run/run')).status).toBe(200)
    // A late call of the same period, stored after its invoice was finalized: counted, not billed.
    expect((await h.http('POST', '/v1/events', { body: event('late', inPeriod(25), 'eu') })).status).toBe(202)
    await until('the late call is stored', async () => (await byMeter())[calls].stored === 4)

    const meters = await byMeter()
    const invoices = (meters[calls].invoices as Record<string, unknown>[])
    expect(invoices).toHaveLength(1)
    expect(invoices[0]).toMatchObject({ usage_start: periodStart.toISOString(), usage_end: periodEnd.toISOString(), quantity: '3' })
    // received = stored + duplicates + rejected; counted by the meter (no filter): every stored call; billed: the 3 the
    // invoice saw, not the late one.
    expect(meters[calls]).toMatchObject({ meter_name: 'Calls', event_name: 'call', received: 5 + rejected, stored: 4, duplicates: 1, rejected, counted: 4, billed: 3, billed_quantity: '3' })
    // The EU meter reads the same events of its name, counts the EU ones (c1, c3, late) and is on no invoice.
    expect(meters[euCalls]).toMatchObject({ received: 5 + rejected, stored: 4, duplicates: 1, rejected, counted: 3, billed: 0, billed_quantity: '0', invoices: [] })
    // The late call is unsettled: counted in the billed window, not billed.
    expect(meters[calls]).toMatchObject({ corrected: 0, unsettled: 1 })
    // c2, billed, cancelled after the invoice: counted 3, still billed 3 (what the invoice saw), corrected 1, and nothing
    // unsettled in count (the late call +1, the cancelled one −1).
    const cancel = await h.http('POST', '/v1/events/corrections', { body: { items: [{ event_id: 'c2', action: 'cancel', reason: 'test call' }] } })
    expect(cancel.body.items[0].status, JSON.stringify(cancel.body)).toBe('applied')
    expect((await byMeter())[calls]).toMatchObject({ stored: 4, corrected: 1, counted: 3, billed: 3, adjusted: 0, unsettled: 0 })

    // Two more late calls: unsettled 2 until the usage-adjustments job settles them (2 × 0.10, scheduled as a line of the
    // subscription's next invoice: settled once recorded), then adjusted 2 and nothing unsettled; billed stays what the
    // invoice saw.
    expect((await h.http('POST', '/v1/events/bulk', { body: { events: [event('late2', inPeriod(26), 'us'), event('late3', inPeriod(27), 'us')] } })).status).toBe(202)
    await until('the late calls are stored', async () => (await byMeter())[calls].stored === 6)
    expect((await byMeter())[calls]).toMatchObject({ counted: 5, billed: 3, adjusted: 0, unsettled: 2 })
    const adjusting = await h.http('POST', '/v1/jobs/usage-adjustments/run')
    expect(adjusting.body.summary, JSON.stringify(adjusting.body)).toMatchObject({ scheduled: 1, failed: 0 })
    const adjustment = (await h.http('GET', `/v1/usage-adjustments?customer_id=${cus.id}`)).body.items
    expect(adjustment.map((a: { status: string; total: string }) => [a.status, a.total])).toEqual([['scheduled', '0.2']])
    expect((await byMeter())[calls]).toMatchObject({ counted: 5, billed: 3, adjusted: 2, unsettled: 0 })

    // Outside the period: nothing. Bad input: 400 naming the field; an unknown customer: 404; another tenant: 404.
    const empty = await h.http('GET', `/v1/customers/${cus.id}/usage/reconciliation?start_time=2020-01-01T00:00:00Z&end_time=2020-02-01T00:00:00Z&meter_ids=${calls}`)
    expect(empty.body.meters).toEqual([expect.objectContaining({ meter_id: calls, received: 0, stored: 0, counted: 0, billed: 0 })])
    const reversed = await h.http('GET', `/v1/customers/${cus.id}/usage/reconciliation?start_time=${periodEnd.toISOString()}&end_time=${periodStart.toISOString()}`)
    expect([reversed.status, Object.keys(reversed.body.details)]).toEqual([400, ['end_time']])
    const missing = await h.http('GET', `/v1/customers/${cus.id}/usage/reconciliation?start_time=${periodStart.toISOString()}`)
    expect([missing.status, Object.keys(missing.body.details)]).toEqual([400, ['end_time']])
    const unknownMeter = await h.http('GET', `/v1/customers/${cus.id}/usage/reconciliation?${range}&meter_ids=meter_nope`)
    expect([unknownMeter.status, Object.keys(unknownMeter.body.details)]).toEqual([400, ['meter_ids']])
    expect((await h.http('GET', `/v1/customers/cus_nope/usage/reconciliation?${range}`)).status).toBe(404)
    const other = await h.newTenant()
    expect((await h.http('GET', `/v1/customers/${cus.id}/usage/reconciliation?${range}`, { key: other.apiKey })).status).toBe(404)
  })
})
