// A small world of records of every kind, made over HTTP in one environment, and a valid request body for
// every operation that takes one. The fuzz suite mutates these bodies (so its malformed values reach past
// the schema into the services and engines); the isolation suite swaps one of their ids for another
// tenant's. Both walk the OpenAPI document, so a new operation without a sample here fails them.
import { expect } from 'vitest'
import type { Harness } from './harness.ts'

/** The ids of the world's records by kind. Kinds are the names the isolation suite swaps by. */
export interface World {
  key: string
  ids: Record<string, string>
  /** Other things addressed by value: external ids, lookup keys, tax rate codes. */
  names: Record<string, string>
}

let seq = 0
const RANGE = () => ({ start_time: inDays(-2), end_time: inDays(-1) })
const inDays = (days: number): string => new Date(Date.now() + days * 86_400_000).toISOString()
const unique = (prefix: string): string => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++seq}`

async function call(h: Harness, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await h.http(method, path, { body, key })
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300)
  return res.body
}

/**
 * Builds the world with `key` (the harness's admin key by default). The billing clock is the real one,
 * so dates in samples are relative to now.
 */
export async function buildWorld(h: Harness, key = h.key): Promise<World> {
  const post = (path: string, body?: unknown) => call(h, key, 'POST', path, body)
  const ids: Record<string, string> = {}
  const names: Record<string, string> = {}

  names.customer = unique('cust')
  ids.customer = (await post('/v1/customers', { external_id: names.customer, name: 'World customer' })).id
  ids.customer2 = (await post('/v1/customers', { external_id: unique('cust2') })).id
  const meter = await post('/v1/meters', { name: unique('meter'), event_name: unique('evt'), aggregation: { type: 'SUM', field: 'n' } })
  ids.meter = meter.id
  names.event = meter.event_name
  ids.feature = (await post('/v1/features', { name: unique('feat'), type: 'metered', meter_id: ids.meter })).id
  ids.feature2 = (await post('/v1/features', { name: unique('flag'), type: 'boolean' })).id
  const plan = await post('/v1/plans', {
    name: unique('plan'),
    prices: [{ currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', invoice_cadence: 'ADVANCE', amount: '10' }],
  })
  ids.plan = plan.id
  ids.plan2 = (await post('/v1/plans', { name: unique('plan2') })).id
  names.price = unique('lk')
  ids.price = (
    await post('/v1/prices', { plan_id: ids.plan, currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0.01', meter_id: ids.meter, lookup_key: names.price })
  ).id
  ids.entitlement = (await post('/v1/entitlements', { plan_id: ids.plan, feature_id: ids.feature, usage_limit: 1000, usage_reset_period: 'MONTHLY' })).id
  ids.addon = (await post('/v1/addons', { name: unique('addon'), lookup_key: unique('addon'), prices: [{ currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '2' }] })).id
  ids.group = (await post('/v1/groups', { name: unique('group'), entity_type: 'price', entity_ids: [] })).id
  names.priceUnit = unique('U').replace(/[^A-Za-z0-9]/g, '').slice(-16).toUpperCase()
  ids.priceUnit = (await post('/v1/prices/units', { name: 'World credits', code: names.priceUnit, symbol: 'C', base_currency: 'USD', conversion_rate: '0.01' })).id
  names.taxRate = unique('VAT').toUpperCase()
  ids.taxRate = (await post('/v1/taxes/rates', { name: 'VAT', code: names.taxRate, tax_rate_type: 'percentage', percentage_value: '10' })).id
  ids.coupon = (await post('/v1/coupons', { name: unique('coupon'), type: 'percentage', cadence: 'forever', percentage_off: '10' })).id
  ids.coupon2 = (await post('/v1/coupons', { name: unique('coupon2'), type: 'percentage', cadence: 'forever', percentage_off: '5' })).id

  const sub = await post('/v1/subscriptions', { customer_id: ids.customer, plan_id: ids.plan, currency: 'USD', billing_period: 'MONTHLY' })
  ids.subscription = sub.id
  ids.lineItem = sub.line_items[0].id
  for (const kind of ['subscription2', 'subscription3']) ids[kind] = (await post('/v1/subscriptions', { customer_id: ids.customer2, plan_id: ids.plan, currency: 'USD', billing_period: 'MONTHLY' })).id
  ids.addonAssociation = (await post('/v1/subscriptions/addon', { subscription_id: ids.subscription3, addon_id: ids.addon })).id
  ids.draftSubscription = (await post('/v1/subscriptions', { customer_id: ids.customer2, plan_id: ids.plan, currency: 'USD', billing_period: 'MONTHLY', subscription_status: 'draft' })).id
  const phase = await post(`/v1/subscriptions/${ids.subscription}/phases`, { start_date: inDays(40), end_date: inDays(50) })
  ids.phase = phase.id
  ids.couponAssociation = (await post(`/v1/coupons/${ids.coupon2}/associations`, { subscription_id: ids.subscription })).id
  ids.taxAssociation = (await post('/v1/taxes/associations', { tax_rate_code: names.taxRate, entity_type: 'customer', entity_id: ids.customer2 })).id
  ids.creditGrant = (await post('/v1/creditgrants', { name: unique('grant'), scope: 'PLAN', plan_id: ids.plan2, credits: '5', cadence: 'ONETIME' })).id
  ids.wallet = (await post('/v1/wallets', { customer_id: ids.customer, currency: 'USD' })).id
  ids.event = (await post('/v1/events', { event_id: unique('evt-id'), event_name: names.event, external_customer_id: names.customer, properties: { n: 1 } })).event_id
  ids.mapping = (await post('/v1/entity-integration-mappings', { entity_id: ids.customer, entity_type: 'customer', provider_type: 'quickbooks', provider_entity_id: unique('qb') })).id

  const invoice = (extra: Record<string, unknown> = {}) =>
    post('/v1/invoices', { customer_id: ids.customer, currency: 'USD', subtotal: '5.00', total: '5.00', amount_due: '5.00', line_items: [{ display_name: 'Setup', amount: '5.00', quantity: '1' }], ...extra })
  ids.invoice = (await invoice()).id
  const paid = await invoice()
  ids.invoiceFinal = paid.id
  ids.invoiceLine = paid.line_items[0].id
  await post(`/v1/invoices/${paid.id}/finalize`)
  ids.invoiceOpen = (await invoice()).id
  await post(`/v1/invoices/${ids.invoiceOpen}/finalize`)
  await call(h, key, 'PUT', `/v1/invoices/${paid.id}/payment`, { payment_status: 'SUCCEEDED', amount: '5.00' })
  ids.payment = (await call(h, key, 'GET', `/v1/payments?invoice_id=${paid.id}`)).items[0].id
  ids.creditNote = (await post('/v1/creditnotes', { invoice_id: paid.id, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: ids.invoiceLine, amount: '1.00' }] })).id
  // A message record (the world's customer has no email: recorded as skipped, nothing sent).
  ids.communication = (await post(`/v1/invoices/${ids.invoiceOpen}/comms/trigger`)).communication.id
  // A credit hold (on credits of its own, loaded once the invoices above are settled: finalizing takes a wallet's credits) and a cost sheet.
  await post(`/v1/wallets/${ids.wallet}/top-up`, { credits_to_add: '10', transaction_reason: 'FREE_CREDIT_GRANT' })
  ids.hold = (await post(`/v1/wallets/${ids.wallet}/holds`, { amount: '1' })).id
  ids.costSheet = (await post('/v1/costs', { name: unique('costs') })).costsheet.id

  ids.endpoint = (await post('/v1/webhooks/endpoints', { url: 'http://127.0.0.1:9/hook', disabled: true })).id
  ids.connection = (await post('/v1/connections', { name: 'stripe', provider_type: 'stripe', encrypted_secret_data: { stripe: { secret_key: 'sk_test_x', webhook_secret: 'whsec_x' } } })).id
  ids.webhookEvent = (await call(h, key, 'GET', '/v1/webhooks/events?limit=1')).items[0].id
  ids.apiKey = (await post('/v1/secrets/api/keys', { name: unique('key'), roles: ['read'] })).secret.id
  // A pending plan change (a schedule) and a plan sync run.
  ids.plan3 = (await post('/v1/plans', { name: unique('plan3'), prices: [{ currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '7' }] })).id
  ids.schedule = (await post(`/v1/subscriptions/${ids.subscription2}/change/execute`, { target_plan_id: ids.plan3, change_at: 'end_of_period' })).schedule_id
  ids.planSync = (await post(`/v1/plans/${ids.plan2}/sync/subscriptions`, {})).id
  // An export task (an import would write records in the background while the suites count rows).
  ids.task = (await post('/v1/tasks', { task_type: 'EXPORT', entity_type: 'INVOICES', file_type: 'CSV', ...RANGE() })).id
  // A scheduled export to a directory under DATA_DIR/exports (it exports only when run).
  ids.scheduledTask = (await post('/v1/tasks/scheduled', { entity_type: 'invoice', interval: 'daily', job_config: { local_directory: 'world' } })).id
  ids.simulation = (await post('/v1/pricing/simulations', { name: unique('sim'), ...RANGE(), candidate: { price_overrides: [{ price_id: ids.price, amount: '0.02' }] } })).id
  // Test clocks exist in sandbox environments only: a production world's is an id no environment has.
  const clock = await h.http('POST', '/v1/test_clocks', { key, body: { name: unique('clock'), frozen_time: inDays(0) } })
  ids.testClock = clock.status === 201 ? clock.body.id : 'clock_in_no_environment'
  const envs = await call(h, key, 'GET', '/v1/environments')
  ids.environment = envs.items.find((e: { id: string }) => key === h.key ? e.id === h.tenant.environments.production : true)?.id ?? envs.items[0].id
  ids.environment2 = envs.items.find((e: { id: string }) => e.id !== ids.environment)?.id ?? ids.environment
  // A new meter answers 503 until its backfill ran (METER_BACKFILL_SETTLE_SECONDS): wait for it, so the
  // suites see only answers to what they send.
  for (let tries = 0; ; tries++) {
    const res = await h.http('POST', '/v1/events/usage/meter', { key, body: { meter_id: ids.meter, ...RANGE() } })
    if (res.status === 200) break
    if (tries > 120) throw new Error(`meter not ready: ${JSON.stringify(res.body)}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return { key, ids, names }
}


/**
 * Valid request bodies per operation (`METHOD /path`), one or more each: every id field an operation
 * accepts appears in at least one of them. Operations that change state once (finalize a draft) still
 * get a body, which later requests may find no longer applicable: they then answer 4xx, never 5xx.
 */
export function sampleBodies(w: World): Record<string, Record<string, unknown>[]> {
  const { ids, names } = w
  const price = { currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '3' }
  const usagePrice = { currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0.5', meter_id: ids.meter, group_id: ids.group }
  const line = { display_name: 'Line', amount: '2.00', quantity: '1', price_id: ids.price, plan_id: ids.plan, meter_id: ids.meter, entity_type: 'PLAN', entity_id: ids.plan }
  const subscription = { plan_id: ids.plan, currency: 'USD', billing_period: 'MONTHLY' }
  return {
    'POST /v1/secrets/api/keys': [{ name: unique('k'), roles: ['read'], environment_id: ids.environment }],
    'POST /v1/customers': [{ external_id: unique('c'), name: 'C', email: 'a@b.test', address_country: 'DE', metadata: { a: 'b' }, integrations: [{ provider_type: 'stripe', provider_entity_id: unique('cus') }] }],
    'PUT /v1/customers/{id}': [{ name: 'Renamed', metadata: { a: 'c' } }],
    'PUT /v1/customers': [{ name: 'Renamed by query' }],
    'POST /v1/entity-integration-mappings': [{ entity_id: ids.customer2, entity_type: 'customer', provider_type: 'stripe', provider_entity_id: unique('cus') }],
    'POST /v1/events/query': [{ external_customer_id: names.customer, event_name: names.event }],
    'POST /v1/events/export': [{ external_customer_id: names.customer, event_names: [names.event], sources: [''], ...RANGE() }],
    'POST /v1/events/analytics': [{ external_customer_id: names.customer, feature_ids: [ids.feature], group_by: ['source', 'properties.n'], window_size: 'DAY', expand: ['feature', 'price'], ...RANGE() }],
    'POST /v1/events/analytics/export': [{ external_customer_id: names.customer, feature_ids: [ids.feature], group_by: ['source'], format: 'csv', metadata_columns: ['tier'], columns: ['reconciliation'], ...RANGE() }],
    'POST /v1/plans/{id}/clone': [{ name: unique('clone') }],
    'POST /v1/prices/bulk': [{ items: [{ ...usagePrice, plan_id: ids.plan2 }] }],
    'POST /v1/entitlements/bulk': [{ items: [{ plan_id: ids.plan2, feature_id: ids.feature }] }],
    'POST /v1/wallets/transactions/search': [{ wallet_id: ids.wallet }],
    'PUT /v1/taxes/associations/{id}': [{ priority: 2 }],
    'POST /v1/secrets/integrations/create/{provider}': [{ name: unique('stripe'), credentials: { secret_key: 'sk_test_y', webhook_secret: 'whsec_y' } }],
    'POST /v1/ai/pricing/parse': [{ description: '$49/month includes 10k API calls, then $0.002 per call' }],
    'POST /v1/environments/{id}/clone': [{ target_environment_id: ids.environment2 }],
    'POST /v1/customers/search': [{ customer_ids: [ids.customer], limit: 5 }],
    'POST /v1/meters': [{ name: unique('m'), event_name: unique('e'), aggregation: { type: 'SUM', field: 'n' }, filters: [{ key: 'region', values: ['eu'] }] }],
    'PUT /v1/meters/{id}': [{ name: 'Renamed meter' }],
    'POST /v1/events/usage/meter': [{ meter_id: ids.meter, customer_id: ids.customer, ...RANGE() }],
    'POST /v1/events/usage': [{ event_name: names.event, aggregation_type: 'COUNT', customer_id: ids.customer, ...RANGE() }],
    'POST /v1/features': [
      { name: unique('f'), type: 'metered', meter_id: ids.meter },
      { name: unique('f'), type: 'boolean', group_id: null },
    ],
    'PUT /v1/features/{id}': [{ name: 'Renamed feature', description: 'd' }],
    'POST /v1/features/search': [{ feature_ids: [ids.feature] }],
    'POST /v1/plans': [{ name: unique('p'), prices: [usagePrice], entitlements: [{ feature_id: ids.feature, usage_limit: 10, usage_reset_period: 'MONTHLY' }] }],
    'PUT /v1/plans/{id}': [{ name: 'Renamed plan' }],
    'POST /v1/plans/search': [{ plan_ids: [ids.plan] }],
    'POST /v1/addons': [{ name: unique('a'), lookup_key: unique('a'), prices: [price], entitlements: [{ feature_id: ids.feature2 }] }],
    'PUT /v1/addons/{id}': [{ name: 'Renamed addon' }],
    'POST /v1/addons/search': [{ addon_ids: [ids.addon] }],
    'POST /v1/prices': [
      { ...usagePrice, plan_id: ids.plan2 },
      { ...price, entity_type: 'ADDON', entity_id: ids.addon },
      { currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', price_unit_type: 'CUSTOM', price_unit_id: ids.priceUnit, price_unit_amount: '300', plan_id: ids.plan2 },
    ],
    'PUT /v1/prices/{id}': [{ description: 'd', group_id: ids.group }],
    'POST /v1/prices/units': [{ name: 'Credits', code: unique('C').replace(/[^A-Za-z0-9]/g, '').slice(-16), symbol: '₵', base_currency: 'USD', conversion_rate: '0.01', metadata: { a: 'b' } }],
    'PUT /v1/prices/units/{id}': [{ name: 'Renamed unit', metadata: { a: 'c' } }],
    'POST /v1/prices/units/search': [{ price_unit_ids: [ids.priceUnit] }],
    'POST /v1/prices/search': [{ price_ids: [ids.price] }],
    'POST /v1/entitlements': [
      { plan_id: ids.plan2, feature_id: ids.feature2, start_date: inDays(0), end_date: inDays(30) },
      { entity_type: 'ADDON', entity_id: ids.addon, feature_id: ids.feature, usage_reset_period: 'MONTHLY' },
    ],
    'PUT /v1/entitlements/{id}': [{ usage_limit: 2000 }],
    'POST /v1/entitlements/search': [{ feature_ids: [ids.feature] }],
    'POST /v1/subscriptions/lineitems/search': [{ subscription_ids: [ids.subscription] }],
    'POST /v1/subscriptions/usage': [{ subscription_id: ids.subscription }],
    'POST /v1/subscriptions/addon': [{ subscription_id: ids.subscription2, addon_id: ids.addon }],
    'DELETE /v1/subscriptions/addon': [{ addon_association_id: ids.addonAssociation }],
    'POST /v1/subscriptions/{id}/lineitems': [{ price_id: ids.price, quantity: '1' }],
    'DELETE /v1/subscriptions/lineitems/{id}': [{}],
    'POST /v1/subscriptions': [
      { ...subscription, customer_id: ids.customer, invoicing_customer_id: ids.customer2, coupons: [ids.coupon], addons: [{ addon_id: ids.addon }], tax_rate_overrides: [{ currency: 'USD', tax_rate_code: names.taxRate }] },
      { ...subscription, customer_id: ids.customer, parent_subscription_id: ids.subscription, phases: [{ start_date: inDays(60), line_items: [{ price_id: ids.price }] }] },
      { ...subscription, external_customer_id: names.customer, inheritance: { subscriptions_ids_for_grouped_invoicing: [ids.subscription3] } },
    ],
    'PUT /v1/subscriptions/{id}': [{ metadata: { a: 'b' } }],
    'POST /v1/subscriptions/search': [{ subscription_ids: [ids.subscription] }],
    'POST /v1/subscriptions/{id}/activate': [{}],
    'POST /v1/subscriptions/{id}/cancel': [{ cancellation_type: 'end_of_period' }],
    'POST /v1/subscriptions/{id}/change/preview': [{ target_plan_id: ids.plan3, proration_behavior: 'create_prorations' }],
    'POST /v1/subscriptions/{id}/change/execute': [{ target_plan_id: ids.plan3, change_at: 'end_of_period' }],
    'POST /v1/subscriptions/schedules/{schedule_id}/cancel': [{ subscription_id: ids.subscription2, schedule_type: 'plan_change' }],
    'POST /v1/v1/subscriptions/schedules/{schedule_id}/cancel': [{ subscription_id: ids.subscription2, schedule_type: 'plan_change' }],
    'POST /v1/plans/{id}/sync/subscriptions': [{ change_at: 'end_of_period' }],
    'POST /v1/subscriptions/{id}/modify/preview': [
      { type: 'quantity_change', quantity_change_params: { line_items: [{ id: ids.lineItem, quantity: '2' }] } },
      { type: 'grouped_invoicing_add', grouped_invoicing_params: { child_subscription_ids: [ids.subscription2] } },
    ],
    'POST /v1/subscriptions/{id}/modify/execute': [{ type: 'quantity_change', quantity_change_params: { line_items: [{ id: ids.lineItem, quantity: '3' }], proration_behavior: 'none' } }],
    'POST /v1/subscriptions/{id}/phases': [{ start_date: inDays(90), line_items: [{ price_id: ids.price, quantity: '1' }] }],
    'PUT /v1/subscriptions/{id}/phases/{phase_id}': [{ metadata: { a: 'b' } }],
    'POST /v1/groups': [{ name: unique('g'), entity_type: 'feature', entity_ids: [ids.feature2] }],
    'PUT /v1/groups/{id}': [{ name: 'Renamed group', entity_ids: [ids.price] }],
    'POST /v1/groups/search': [{ limit: 5 }],
    'POST /v1/wallets': [
      { customer_id: ids.customer2, currency: 'EUR' },
      { external_customer_id: names.customer, currency: 'GBP' },
    ],
    'PUT /v1/wallets/{id}': [{ name: 'Renamed wallet' }],
    'POST /v1/wallets/search': [{ limit: 5 }],
    'POST /v1/wallets/{id}/top-up': [{ credits_to_add: '10', transaction_reason: 'FREE_CREDIT_GRANT', idempotency_key: unique('t') }],
    'POST /v1/wallets/{id}/debit': [{ credits: '1', idempotency_key: unique('d') }],
    'POST /v1/wallets/{id}/holds': [{ amount: '1', expires_in_seconds: 60, idempotency_key: unique('h'), metadata: { a: 'b' } }, { feature_id: ids.feature, quantity: '1' }],
    'POST /v1/wallets/holds/{id}/settle': [{ amount: '0.5', allow_overage: false }, { quantity: '1' }],
    'POST /v1/customers/{id}/entitlements/check': [{ feature_id: ids.feature, quantity: 1 }, { feature_id: ids.feature, quantity: '1', reserve: true, reservation_expires_in_seconds: 60 }],
    'PUT /v1/subscriptions/{id}/spending-limit': [{ spending_limit: '100' }, { spending_limit: null }],
    'POST /v1/costs': [{ name: unique('sheet'), lookup_key: unique('sheet-key'), description: 'LLM tokens', metadata: { a: 'b' } }],
    ...Object.fromEntries(['analytics', 'analytics-v2', 'analytics/export'].map((p) => [`POST /v1/costs/${p}`, [{ external_customer_id: names.customer, feature_ids: [ids.feature], group_by: ['source'], window_size: 'DAY', ...RANGE() }]])),
    'POST /v1/costs/search': [{ limit: 5 }],
    'PUT /v1/costs/{id}': [{ name: 'Renamed sheet' }],
    'POST /v1/creditgrants': [
      { name: unique('g'), scope: 'PLAN', plan_id: ids.plan, credits: '5', cadence: 'ONETIME' },
      { name: unique('g'), scope: 'SUBSCRIPTION', subscription_id: ids.subscription, credits: '5', cadence: 'ONETIME', start_date: inDays(0) },
    ],
    'PUT /v1/creditgrants/{id}': [{ name: 'Renamed grant' }],
    'POST /v1/creditgrants/search': [{ limit: 5 }],
    'POST /v1/invoices/preview': [{ subscription_id: ids.subscription }],
    'POST /v1/invoices': [
      {
        customer_id: ids.customer,
        subscription_id: ids.subscription,
        currency: 'USD',
        subtotal: '2.00',
        total: '1.98',
        amount_due: '1.98',
        coupons: [ids.coupon],
        line_items: [line],
        tax_rates: [ids.taxRate],
        tax_rate_overrides: [{ currency: 'USD', tax_rate_code: names.taxRate, auto_apply: false }],
      },
    ],
    'PUT /v1/invoices/{id}': [{ description: 'd', line_items: [line] }],
    'POST /v1/invoices/search': [{ customer_id: ids.customer }],
    'PUT /v1/invoices/{id}/payment': [{ payment_status: 'PENDING' }],
    'POST /v1/creditnotes': [{ invoice_id: ids.invoiceFinal, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: ids.invoiceLine, amount: '0.50' }] }],
    'POST /v1/creditnotes/search': [{ invoice_id: ids.invoiceFinal }],
    'POST /v1/payments/search': [{ invoice_id: ids.invoiceFinal }],
    'POST /v1/payments': [{ destination_type: 'INVOICE', destination_id: ids.invoiceOpen, payment_method_type: 'OFFLINE', amount: '0.01', currency: 'USD', process_payment: false }],
    'PUT /v1/payments/{id}': [{ metadata: { note: 'x' } }],
    'PUT /v1/environments/{id}': [{ name: unique('env') }],
    'POST /v1/environments': [{ name: unique('env'), type: 'development' }],
    'PUT /v1/tenants/update': [{ metadata: { team: 'billing' } }],
    'POST /v1/users': [{ type: 'service_account', roles: ['read'] }],
    'POST /v1/alerts/search': [{ entity_id: ids.wallet, customer_id: ids.customer }],
    'POST /v1/users/search': [{ user_ids: [ids.apiKey] }],
    'POST /v1/coupons/{id}/associations': [{ subscription_id: ids.subscription2, subscription_line_item_id: ids.lineItem }],
    'POST /v1/coupons': [
      { name: unique('c'), type: 'fixed', cadence: 'once', amount_off: '1', currency: 'USD' },
      { name: unique('c'), type: 'percentage', cadence: 'forever', percentage_off: '10', rules: { plan_ids: [ids.plan], price_ids: [ids.price], minimum_amount: '5', minimum_amount_currency: 'USD' } },
    ],
    'PUT /v1/coupons/{id}': [{ name: 'Renamed coupon' }],
    'POST /v1/coupons/search': [{ limit: 5 }],
    'POST /v1/taxes/rates': [{ name: 'T', code: unique('T'), tax_rate_type: 'fixed', fixed_value: '1' }],
    'PUT /v1/taxes/rates/{id}': [{ description: 'd' }],
    'POST /v1/taxes/rates/search': [{ limit: 5 }],
    'POST /v1/taxes/associations': [
      { tax_rate_code: names.taxRate, entity_type: 'customer', entity_id: ids.customer },
      { tax_rate_code: names.taxRate, entity_type: 'subscription', entity_id: ids.subscription },
    ],
    'POST /v1/taxes/associations/search': [{ limit: 5 }],
    'POST /v1/webhooks/endpoints': [{ url: 'http://127.0.0.1:9/other', disabled: true }],
    'PUT /v1/webhooks/endpoints/{id}': [{ description: 'd' }],
    'POST /v1/webhooks/endpoints/search': [{ limit: 5 }],
    'POST /v1/connections': [
      { name: 'stripe', provider_type: 'stripe', encrypted_secret_data: { stripe: { secret_key: 'sk_test_y', webhook_secret: 'whsec_y' } } },
      // A closed local port: a sync job run by the suite fails at once instead of looking for Intuit.
      { name: 'quickbooks', provider_type: 'quickbooks', api_base_url: 'http://127.0.0.1:9', encrypted_secret_data: { quickbooks: { client_id: 'c', client_secret: 's', refresh_token: 'r', realm_id: '1', token_url: 'http://127.0.0.1:9/token' } } },
    ],
    'PUT /v1/connections/{id}': [{ name: 'Renamed connection' }],
    'POST /v1/connections/search': [{ limit: 5 }],
    'POST /v1/events': [{ event_name: names.event, external_customer_id: names.customer, properties: { n: 1 } }],
    // An unknown id: answered per item (404), so the world's usage stays as the other samples expect it.
    'POST /v1/events/corrections': [{ items: [{ event_id: unique('no-such-event'), action: 'cancel', reason: 'sample' }] }],
    'POST /v1/events/bulk': [{ events: [{ event_name: names.event, external_customer_id: names.customer, properties: { n: 2 } }] }],
    'POST /v1/pricing/simulations': [
      { name: unique('sim'), ...RANGE(), customer_ids: [ids.customer], candidate: { price_overrides: [{ price_id: ids.price, billing_model: 'TIERED', tier_mode: 'SLAB', tiers: [{ up_to: 10, unit_amount: '0.01' }, { up_to: null, unit_amount: '0.005' }], allowance: 5 }] } },
      { name: unique('sim'), ...RANGE(), candidate: { plan_id: ids.plan } },
    ],
    'POST /v1/tasks': [{ task_type: 'EXPORT', entity_type: 'CREDIT_NOTES', file_type: 'PARQUET', file_name: 'notes.parquet', metadata: { a: 'b' }, filters: {}, ...RANGE() }],
    'PUT /v1/tasks/{id}/status': [{ task_status: 'FAILED' }],
    'POST /v1/tasks/scheduled': [{ entity_type: 'events', interval: 'hourly', job_config: { local_directory: 'world2', format: 'csv', compression: 'gzip' } }],
    'POST /v1/tasks/scheduled/search': [{ limit: 5 }],
    'PUT /v1/tasks/scheduled/{id}': [{ enabled: true }],
    'DELETE /v1/tasks/scheduled/{id}': [{}],
    'POST /v1/tasks/scheduled/{id}/run': [{ ...RANGE() }],
    'POST /v1/tasks/scheduled/schedule-update-billing-period': [{}],
    'POST /v1/communications/search': [{ customer_id: ids.customer, kind: 'invoice', delivery_status: 'skipped', limit: 5 }],
    'PUT /v1/communications/settings': [{ from_email: 'billing@example.com', from_name: 'World', auto_send: { invoice: false }, templates: { invoice: { subject: 'Invoice {{invoice_number}}', html: null } } }],
    'PUT /v1/dunning/settings': [{ steps: [{ days_after_due: 3, actions: ['reminder_email', 'retry_payment'] }, { days_after_due: 10, actions: ['suspend_entitlements'] }] }, { preset: 'gentle' }],
    'PUT /v1/usage-adjustments/settings': [{ late_usage: 'adjust', minimum_amount: '0.50', horizon_periods: 2 }],
    'POST /v1/test_clocks': [{ name: unique('clock'), frozen_time: inDays(0), metadata: { a: 'b' } }],
    'POST /v1/test_clocks/{id}/advance': [{ frozen_time: inDays(1) }],
    'POST /v1/test_clocks/search': [{ limit: 5 }],
    'DELETE /v1/test_clocks/{id}': [{}],
    // The customer portal's lists (a session's calls: with an API key they answer 401).
    ...Object.fromEntries(['subscriptions', 'invoices', 'creditnotes', 'wallets'].map((r) => [`POST /v1/customer/portal/${r}`, [{ page: 1, limit: 5 }]])),
    // A record's DELETE takes an empty body (a field would be a later deletion, refused).
    ...Object.fromEntries(RECORD_DELETES.map((path) => [`DELETE ${path}`, [{}]])),
  }
}

const RECORD_DELETES = ['customers', 'features', 'plans', 'addons', 'prices', 'prices/units', 'entitlements', 'groups', 'creditgrants', 'coupons', 'taxes/rates', 'taxes/associations', 'webhooks/endpoints', 'connections', 'payments'].map((r) => `/v1/${r}/{id}`)

/** The concrete value of a path parameter for an operation in this world. */
function pathValue(w: World, path: string, param: string): string {
  const { ids, names } = w
  if (param === 'external_id') return names.customer
  if (param === 'lookup_key') return names.price
  if (param === 'phase_id') return ids.phase
  if (param === 'name') return 'no-such-job'
  if (param === 'provider') return 'stripe'
  if (param === 'tenant_id') return 'tenant_unknown'
  if (param === 'environment_id') return ids.environment
  if (param === 'run_id') return ids.planSync
  if (param === 'code') return names.priceUnit
  if (param === 'role_id') return 'read'
  const kind = PATH_KIND[path] ?? ID_KIND.find(([prefix]) => path.startsWith(prefix))?.[1]
  if (!kind || !ids[kind]) throw new Error(`no world id for ${param} of ${path}`)
  return ids[kind]
}

// Operations that need a record in a particular state.
const PATH_KIND: Record<string, string> = {
  '/v1/environments/{id}': 'environment',
  '/v1/environments/{id}/clone': 'environment',
  '/v1/subscriptions/{id}/activate': 'draftSubscription',
  '/v1/subscriptions/lineitems/{id}': 'lineItem',
  '/v1/invoices/{id}/payment': 'invoiceOpen',
  '/v1/invoices/{id}/creditable': 'invoiceFinal',
  '/v1/invoices/{id}/sync': 'invoiceOpen',
  '/v1/plans/{id}/sync/subscriptions/{run_id}': 'plan2',
  '/v1/plans/{id}/sync/subscriptions/{run_id}/changes': 'plan2',
  '/v1/subscriptions/schedules/{schedule_id}/cancel': 'schedule',
  '/v1/v1/subscriptions/schedules/{schedule_id}/cancel': 'schedule',
  '/v1/v1/subscriptions/{subscription_id}/schedules': 'subscription',
}

// The first matching prefix names the kind of the path's {id}.
const ID_KIND: [string, string][] = [
  ['/v1/secrets/api/keys/', 'apiKey'],
  ['/v1/customers/', 'customer'],
  ['/v1/customer/portal/invoices/', 'invoice'],
  ['/v1/customer/portal/creditnotes/', 'creditNote'],
  ['/v1/customer/portal/subscriptions/', 'subscription'],
  ['/v1/customer/portal/wallets/', 'wallet'],
  ['/v1/meters/', 'meter'],
  ['/v1/features/', 'feature'],
  ['/v1/plans/', 'plan'],
  ['/v1/addons/', 'addon'],
  ['/v1/prices/units/', 'priceUnit'],
  ['/v1/prices/', 'price'],
  ['/v1/entitlements/', 'entitlement'],
  ['/v1/subscriptions/', 'subscription'],
  ['/v1/groups/', 'group'],
  ['/v1/wallets/holds/', 'hold'],
  ['/v1/wallets/', 'wallet'],
  ['/v1/costs/', 'costSheet'],
  ['/v1/creditgrants/', 'creditGrant'],
  ['/v1/invoices/', 'invoice'],
  ['/v1/creditnotes/', 'creditNote'],
  ['/v1/payments/', 'payment'],
  ['/v1/coupons/associations/', 'couponAssociation'],
  ['/v1/coupons/', 'coupon'],
  ['/v1/taxes/rates/', 'taxRate'],
  ['/v1/taxes/associations/', 'taxAssociation'],
  ['/v1/entity-integration-mappings/', 'mapping'],
  ['/v1/events/', 'event'],
  ['/v1/secrets/integrations/', 'connection'],
  ['/v1/webhooks/endpoints/', 'endpoint'],
  ['/v1/webhooks/events/', 'webhookEvent'],
  ['/v1/webhooks/', 'webhookEvent'],
  ['/v1/connections/', 'connection'],
  ['/v1/pricing/simulations/', 'simulation'],
  ['/v1/test_clocks/', 'testClock'],
  ['/v1/subscription-schedules/', 'schedule'],
  ['/v1/tasks/scheduled/', 'scheduledTask'],
  ['/v1/tasks/', 'task'],
  ['/v1/communications/', 'communication'],
  ['/v1/v1/subscription-schedules/', 'schedule'],
]

/** An operation's path with this world's values in it. */
export const concretePath = (w: World, path: string): string => path.replace(/\{(\w+)\}/g, (_, p: string) => encodeURIComponent(pathValue(w, path, p)))

/** Rows per table of the whole Postgres store: a failed request must leave every count as it was. */
export async function rowCounts(h: Harness): Promise<Record<string, number>> {
  const sql = h.running.deps.sql
  const tables = await sql<{ name: string }[]>`SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name NOT IN ('job_leases', 'schema_migrations') ORDER BY table_name`
  const union = tables.map((t) => `SELECT '${t.name}' AS name, count(*)::int AS n FROM "${t.name}"`).join(' UNION ALL ')
  const rows = await sql.unsafe<{ name: string; n: number }[]>(union)
  return Object.fromEntries(rows.map((r) => [r.name, r.n]))
}
