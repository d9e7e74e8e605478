// Seeds what the console's pages show, over the public API only: a meter and its feature, a plan
// with prices and an entitlement, customers (one named like an XSS probe), a subscription, events,
// a draft invoice, a wallet and a webhook endpoint whose deliveries fail. Used by the browser tests
// and, against a running service, by `npx tsx test/console/seed.ts URL KEY` for screenshots by hand.

export type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>

export interface Seeded {
  meter: any
  feature: any
  plan: any
  customer: any
  xss: any
  invoice: any
  wallet: any
  /** Events sent for `customer`, two an hour: the chart must show their sums. */
  events: { at: string; tokens: number; model: string }[]
  eventName: string
}

export const XSS_NAME = '<img src=x onerror=alert(1)>'

async function ok(call: Call, method: string, path: string, body?: unknown): Promise<any> {
  const res = await call(method, path, body)
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** Polls until the meter's first backfill is done: before that its usage query answers 503. */
async function meterReady(call: Call, id: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const m = await ok(call, 'GET', `/v1/meters/${id}`)
    if (m.ready_revision === m.revision) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`meter ${id} never finished its backfill`)
}

export async function seedConsole(call: Call, now = new Date(), suffix = String(Date.now())): Promise<Seeded> {
  const eventName = `llm.tokens.${suffix}`
  const meter = await ok(call, 'POST', '/v1/meters', { name: 'LLM tokens', event_name: eventName, aggregation: { type: 'SUM', field: 'tokens' } })
  const feature = await ok(call, 'POST', '/v1/features', { name: 'Tokens', type: 'metered', meter_id: meter.id, lookup_key: `tokens-${suffix}` })
  const plan = await ok(call, 'POST', '/v1/plans', { name: 'Pro', lookup_key: `pro-${suffix}`, description: 'For growing teams' })
  await ok(call, 'POST', '/v1/prices', { entity_type: 'PLAN', entity_id: plan.id, currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '49' })
  await ok(call, 'POST', '/v1/prices', { entity_type: 'PLAN', entity_id: plan.id, currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0.002', meter_id: meter.id })
  await ok(call, 'POST', '/v1/entitlements', { entity_type: 'PLAN', entity_id: plan.id, feature_id: feature.id, usage_limit: 100000, usage_reset_period: 'MONTHLY' })

  const customer = await ok(call, 'POST', '/v1/customers', { external_id: `acme-${suffix}`, name: 'Acme Analytics', email: 'billing@acme.test', address_country: 'DE' })
  const xss = await ok(call, 'POST', '/v1/customers', { external_id: `probe-${suffix}`, name: XSS_NAME })
  for (const name of ['Globex', 'Initech', 'Umbrella']) await ok(call, 'POST', '/v1/customers', { external_id: `${name.toLowerCase()}-${suffix}`, name })
  await ok(call, 'POST', '/v1/subscriptions', { customer_id: customer.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY', start_date: new Date(now.getTime() - 86_400_000).toISOString() })

  // Two events in each of the last 12 whole hours (at :10 and :20, so both in the same hour), one per
  // model (a property to group by), rising towards now.
  const events: Seeded['events'] = []
  const thisHour = Math.floor(now.getTime() / 3_600_000) * 3_600_000
  for (let h = 12; h >= 1; h--) {
    const hour = thisHour - h * 3_600_000
    events.push({ at: new Date(hour + 600_000).toISOString(), tokens: 100 * (13 - h), model: 'gpt-4o' })
    events.push({ at: new Date(hour + 1_200_000).toISOString(), tokens: 40 * (13 - h) + (h % 3) * 60, model: 'gpt-4o-mini' })
  }
  await ok(call, 'POST', '/v1/events/bulk', {
    events: events.map((e, i) => ({ event_id: `seed-${suffix}-${i}`, event_name: eventName, external_customer_id: customer.external_id, timestamp: e.at, source: 'api', properties: { tokens: e.tokens, model: e.model } })),
  })
  await meterReady(call, meter.id)

  const invoice = await ok(call, 'POST', '/v1/invoices', {
    customer_id: customer.id,
    currency: 'USD',
    subtotal: '147.73',
    total: '147.73',
    amount_due: '147.73',
    line_items: [
      { display_name: 'Pro plan', amount: '49.00', quantity: '1' },
      { display_name: 'LLM tokens', amount: '98.73', quantity: '49365', price_type: 'USAGE', meter_id: meter.id },
    ],
  })
  const wallet = await ok(call, 'POST', '/v1/wallets', { customer_id: customer.id, currency: 'USD', conversion_rate: '1', initial_credits_to_load: '50' })
  await ok(call, 'POST', `/v1/wallets/${wallet.id}/top-up`, { credits_to_add: '25', transaction_reason: 'FREE_CREDIT_GRANT' })
  // Nothing listens on port 9: every delivery fails, so the delivery log has a failed event to retry.
  await ok(call, 'POST', '/v1/webhooks/endpoints', { url: 'http://127.0.0.1:9/hooks', description: 'billing sync (nothing listens)' })
  return { meter, feature, plan, customer, xss, invoice, wallet, events, eventName }
}

// By hand: seed a running service (e.g. npm start) to look at the console with data in it.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [base = 'http://127.0.0.1:8080', key = process.env.KEY ?? ''] = process.argv.slice(2)
  const call: Call = async (method, path, body) => {
    const res = await fetch(base + path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  const s = await seedConsole(call)
  console.log(JSON.stringify({ customer: s.customer.id, invoice: s.invoice.id, meter: s.meter.id }))
}
