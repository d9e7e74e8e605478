// A billing run shares the process with the API (npm start runs every role in one process): while it bills
// many subscriptions, GET /v1/health keeps being answered all along the run, not only between its long
// steps. Asserted as behaviour (answers in every third of the run), not as a time; the latency is measured
// by bench/health-during-billing.bench.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { runBilling } from '../../domains/invoicing/invoices/run.ts'
import { created, customer, fixedPrice, plan } from '../catalog.ts'
import { startHarness, type Harness } from '../harness.ts'

const N = 300
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock: fixedClock('2024-04-01T00:00:10Z'), env: { INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  const p = await plan(h, { prices: [fixedPrice('10'), fixedPrice('2.50', { invoice_cadence: 'ARREAR' })] })
  const c = await customer(h)
  const sub = await created(h, '/v1/subscriptions', { customer_id: c.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2024-03-01T00:00:00Z' })
  // N − 1 copies of the subscription and its customer, made in SQL: the run, not the setup, is under test.
  const clone = (table: string, where: string, fields: string) =>
    h.running.deps.sql.unsafe(`INSERT INTO ${table} SELECT (jsonb_populate_record(NULL::${table}, to_jsonb(t) || jsonb_build_object(${fields}))).*
      FROM ${table} t, generate_series(1, ${N - 1}) n WHERE ${where}`)
  await clone('customers', `t.id = '${c.id}'`, `'id', 'cus_h' || n, 'external_id', 'health-' || n`)
  await clone('subscriptions', `t.id = '${sub.id}'`, `'id', 'sub_h' || n, 'customer_id', 'cus_h' || n`)
  await clone('subscription_line_items', `t.subscription_id = '${sub.id}'`, `'id', t.id || '_' || n, 'subscription_id', 'sub_h' || n, 'customer_id', 'cus_h' || n`)
})
afterAll(() => h?.stop())

describe('the API while a billing run runs in its process', () => {
  it('answers health probes in every third of the run, and the run bills everything', async () => {
    const answeredAt: number[] = []
    const started = performance.now()
    let done = false
    const run = runBilling(h.running.deps).finally(() => (done = true))
    while (!done) {
      const res = await h.http('GET', '/v1/health', { key: null })
      expect(res.status).toBe(200)
      if (!done) answeredAt.push(performance.now())
    }
    const summary = await run
    const ended = performance.now()
    // Each subscription owes March in advance and April's cycle with March's arrear line.
    expect([summary.invoices_created, summary.failed]).toEqual([2 * N, 0])
    const third = (ended - started) / 3
    const perThird = [0, 1, 2].map((i) => answeredAt.filter((t) => t >= started + i * third && t < started + (i + 1) * third).length)
    expect(perThird.every((n) => n > 0), `answers per third of the run: ${perThird.join(', ')}`).toBe(true)
  })
})
