// Process metrics in Prometheus' text format (prom-client), on a listener of their own (METRICS_HOST,
// METRICS_PORT; loopback by default) rather than the API port: they are process-wide, across tenants, so
// no tenant's key may read them, and a scraper needs no key. One registry per process's Deps, so tests
// that run several services in one process keep their counts apart. No label carries a tenant, customer
// or id: label values come from small fixed sets (outcome, reason, route template, status).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export function createMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const at = { registers: [registry] }
  return {
    registry,
    /** Events offered at intake, by outcome: accepted, invalid (per event), unavailable (503: nothing accepted). */
    intakeEvents: new Counter({ name: 'meterbill_intake_events_total', help: 'Events offered at intake, by outcome', labelNames: ['outcome'] as const, ...at }),
    /** Events of stored batches, by what became of them: stored, duplicate, rejected (dead-lettered). */
    batchEvents: new Counter({ name: 'meterbill_batch_events_total', help: 'Events of usage batches written to ClickHouse, by outcome', labelNames: ['path', 'outcome'] as const, ...at }),
    batchRows: new Histogram({ name: 'meterbill_batch_rows', help: 'Rows per usage batch insert', labelNames: ['path'] as const, buckets: [1, 10, 100, 1000, 5000, 10_000, 25_000, 50_000, 100_000], ...at }),
    insertSeconds: new Histogram({ name: 'meterbill_batch_insert_seconds', help: 'Time of one usage batch insert into ClickHouse, retries included', labelNames: ['path'] as const, buckets: SECONDS, ...at }),
    eventLogBacklog: new Gauge({ name: 'meterbill_event_log_backlog_events', help: 'Direct mode: events acknowledged into the event log and not yet inserted into ClickHouse', ...at }),
    dedupFilterIds: new Gauge({ name: 'meterbill_dedup_filter_ids', help: 'Ids added to the dedup filter of a partition this process holds (repeats included)', labelNames: ['partition'] as const, ...at }),
    dedupFilterBytes: new Gauge({ name: 'meterbill_dedup_filter_bytes', help: 'Memory of the dedup filter of a partition this process holds', labelNames: ['partition'] as const, ...at }),
    consumerLag: new Gauge({ name: 'meterbill_consumer_lag', help: 'Records of the partition not yet fetched by this aggregator (high watermark − last fetched − 1)', labelNames: ['partition'] as const, ...at }),
    billingInvoices: new Counter({ name: 'meterbill_billing_run_invoices_total', help: 'Invoices stored by billing runs', ...at }),
    billingFailures: new Counter({ name: 'meterbill_billing_run_failures_total', help: 'Subscriptions a billing run could not bill (retried on the next run)', ...at }),
    webhookDeliveries: new Counter({ name: 'meterbill_webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome', labelNames: ['outcome'] as const, ...at }),
    /** CSV exports by outcome: complete, aborted (the client left; the query was stopped), failed (after the first byte). */
    csvExports: new Counter({ name: 'meterbill_csv_exports_total', help: 'Streamed CSV exports, by outcome', labelNames: ['outcome'] as const, ...at }),
    csvExportRows: new Counter({ name: 'meterbill_csv_export_rows_total', help: 'Rows sent by streamed CSV exports', ...at }),
    httpSeconds: new Histogram({ name: 'meterbill_http_request_seconds', help: 'HTTP requests by route template, method and status', labelNames: ['route', 'method', 'status'] as const, buckets: SECONDS, ...at }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/** A process's health as GET /health answers it: 200 when `status` is ok, 503 otherwise. */
export type HealthCheck = () => Promise<{ status: 'ok' | 'degraded' }>

/**
 * Serves GET /metrics on its own address, and GET /health when given a check (every role has this listener, the
 * aggregator and the worker no other); resolves once listening, with the port and a stop function.
 */
export async function serveMetrics(metrics: Metrics, host: string, port: number, health?: HealthCheck): Promise<{ port: number; stop: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = req.url?.split('?')[0]
    if (req.method === 'GET' && path === '/health' && health) {
      health().then(
        (h) => res.writeHead(h.status === 'ok' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(h)),
        (err: Error) => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'degraded', error: err.message })),
      )
      return
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(health ? 'GET /metrics or /health\n' : 'GET /metrics\n')
      return
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return { port: (server.address() as AddressInfo).port, stop: () => new Promise((resolve) => server.close(() => resolve())) }
}
