// GET /metrics on its own listener: what intake, batches, HTTP routes, billing runs and webhook deliveries
// did in this process, in Prometheus' text format, with no tenant in any label and nothing on the API port.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventLogOf } from '../../infra/event-log.ts'
import { startHarness, type Harness } from '../harness.ts'

let h: Harness
beforeAll(async () => {
  h = await startHarness({ roles: ['api', 'ingest', 'worker'], env: { KAFKA_BROKERS: '' } }) // direct mode: the batch rows below are the direct path's
})
afterAll(() => h?.stop())

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${h.running.metricsPort}/metrics`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/plain')
  return res.text()
}

/** The value of one series, e.g. sample(text, 'meterbill_intake_events_total', { outcome: 'accepted' }); 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels)
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]))
    if (wanted.every(([k, v]) => got[k] === v)) return Number(m[3])
  }
  return 0
}

const event = (id: string, extra: Record<string, unknown> = {}) => ({ event_id: id, event_name: 'api.call', external_customer_id: 'cust-metrics', ...extra })

describe('GET /metrics', () => {
  it('counts intake outcomes and what became of the stored batches', async () => {
    const before = await scrape()
    const bulk = await h.http('POST', '/v1/events/bulk', { body: { events: [event('m-1'), event('m-2'), event('m-3', { timestamp: '2026-02-30T00:00:00Z' })] } })
    expect(bulk.status).toBe(202)
    // Direct mode stores from its event log after the 202: each request's batch is inserted before the next.
    const stored = () => eventLogOf(h.running.deps)!.settled(5000)
    expect(await stored()).toBe(true)
    const again = await h.http('POST', '/v1/events/bulk', { body: { events: [event('m-1')] } })
    expect(again.status).toBe(202)
    expect(await stored()).toBe(true)
    const text = await scrape()
    expect(text).toMatch(/^meterbill_event_log_backlog_events 0$/m)
    const delta = (name: string, labels: Record<string, string>) => sample(text, name, labels) - sample(before, name, labels)
    expect(delta('meterbill_intake_events_total', { outcome: 'accepted' })).toBe(3)
    expect(delta('meterbill_intake_events_total', { outcome: 'invalid' })).toBe(1)
    expect(delta('meterbill_batch_events_total', { path: 'direct', outcome: 'stored' })).toBe(2)
    expect(delta('meterbill_batch_events_total', { path: 'direct', outcome: 'duplicates' })).toBe(1)
    expect(delta('meterbill_batch_insert_seconds_count', { path: 'direct' })).toBe(2)
    expect(delta('meterbill_batch_rows_sum', { path: 'direct' })).toBe(3)
  })

  it('times HTTP requests by route template, method and status, never by id or tenant', async () => {
    const created = await h.http('POST', '/v1/customers', { body: { external_id: 'metrics-1', name: 'Metrics' } })
    expect(created.status).toBe(201)
    expect((await h.http('GET', `/v1/customers/${created.body.id}`)).status).toBe(200)
    expect((await h.http('GET', '/v1/customers/cus_missing')).status).toBe(404)
    const text = await scrape()
    expect(sample(text, 'meterbill_http_request_seconds_count', { route: '/v1/customers', method: 'POST', status: '201' })).toBeGreaterThanOrEqual(1)
    expect(sample(text, 'meterbill_http_request_seconds_count', { route: '/v1/customers/:id', method: 'GET', status: '200' })).toBeGreaterThanOrEqual(1)
    expect(sample(text, 'meterbill_http_request_seconds_count', { route: '/v1/customers/:id', method: 'GET', status: '404' })).toBeGreaterThanOrEqual(1)
    expect(text).not.toContain(created.body.id)
    expect(text).not.toContain(h.tenant.tenantId)
  })

  it('counts billing runs and webhook deliveries', async () => {
    expect((await h.http('POST', '/v1/jobs/billing-run/run')).status).toBe(200)
    const text = await scrape()
    expect(text).toMatch(/^meterbill_billing_run_invoices_total \d+$/m)
    expect(text).toMatch(/^meterbill_billing_run_failures_total 0$/m)
    expect(text).toContain('# TYPE meterbill_webhook_deliveries_total counter')
    expect(text).toContain('process_cpu_seconds_total')
  })

  it('is served on its own listener only: the API port has no /metrics', async () => {
    expect((await fetch(`${h.baseUrl}/metrics`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${h.running.metricsPort}/v1/health`)).status).toBe(404)
  })
})
