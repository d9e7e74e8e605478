// Wallets with invoices through HTTP: credits paying invoices at finalization and coming back on void,
// credits bought by invoice, auto top-up by invoice under rule 10, and the real-time (ongoing) balance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import { toWire } from '../../records/wire.ts'
import { ongoingBalanceOf } from './realtime.ts'
import { call, ledger as ledgerOf, newWallet as walletFor, runNamedJob, topUp as topUpOf } from '../../../test/wallets.ts'

const clock = fixedClock('2025-03-10T12:00:00Z')
let h: Harness

beforeAll(async () => {
  // Direct mode, and meters counting at once: the calendar is fixed, so a settle delay would never pass.
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
})
afterAll(() => h?.stop())

const ok = (method: string, path: string, body?: unknown, status?: number) => call(h, method, path, body, status)
const newWallet = (customerId: string, body: Record<string, unknown> = {}) => walletFor(h, customerId, body)
const topUp = (id: string, body: Record<string, unknown>) => topUpOf(h, id, body)
const debit = (id: string, credits: string) => ok('POST', `/v1/wallets/${id}/debit`, { credits })
const balance = async (id: string) => (await ok('GET', `/v1/wallets/${id}`)).credit_balance
const ledger = (id: string) => ledgerOf(h, id)

/** A one-off invoice of a usage line and a fixed line, finalized. */
async function finalizedInvoice(customerId: string, usage: string, fixed: string) {
  const total = (Number(usage) + Number(fixed)).toFixed(2)
  const line_items = [
    { amount: usage, quantity: '1', price_type: 'USAGE', display_name: 'API calls' },
    { amount: fixed, quantity: '1', price_type: 'FIXED', display_name: 'Seat' },
  ]
  const draft = await ok('POST', '/v1/invoices', { customer_id: customerId, currency: 'USD', subtotal: total, total, amount_due: total, line_items }, 201)
  await ok('POST', `/v1/invoices/${draft.id}/finalize`)
  return ok('GET', `/v1/invoices/${draft.id}`)
}

describe('credits paying invoices', () => {
  it('pays eligible lines at finalization in consumption order, and gives everything back on void', async () => {
    const c = await customer(h)
    const w = await newWallet(c.id)
    const free = (await topUp(w.id, { credits_to_add: '30', priority: 1 })).wallet_transaction
    const bought = (await topUp(w.id, { credits_to_add: '20', priority: 2, transaction_reason: 'PURCHASED_CREDIT_DIRECT' })).wallet_transaction
    const invoice = await finalizedInvoice(c.id, '40.00', '25.00')
    expect(invoice).toMatchObject({ invoice_status: 'FINALIZED', total: '65', total_prepaid_credits_applied: '50', amount_due: '15', amount_remaining: '15' })
    expect(invoice.line_items.map((l: any) => l.prepaid_credits_applied)).toEqual(['40', '10'])
    expect(await balance(w.id)).toBe('0')
    const [payment] = (await ledger(w.id)).filter((t: any) => t.transaction_reason === 'INVOICE_PAYMENT')
    expect(payment).toMatchObject({ type: 'debit', credit_amount: '50', reference_type: 'INVOICE', reference_id: invoice.id })
    expect(payment.consumption_breakdown).toEqual([
      { credit_id: free.id, credits: '30' },
      { credit_id: bought.id, credits: '20' },
    ])

    await ok('POST', `/v1/invoices/${invoice.id}/void`)
    expect(await ok('GET', `/v1/wallets/${w.id}`)).toMatchObject({ credit_balance: '50', credits_available_breakdown: { free: '30', purchased: '20' } })
    const returned = (await ledger(w.id)).filter((t: any) => t.parent_transaction_id)
    expect(returned.map((t: any) => [t.parent_transaction_id, t.transaction_reason, t.credit_amount, t.priority, t.reference_id])).toEqual([
      [free.id, 'FREE_CREDIT_GRANT', '30', 1, invoice.id],
      [bought.id, 'PURCHASED_CREDIT_DIRECT', '20', 2, invoice.id],
    ])
    expect((await h.http('POST', `/v1/invoices/${invoice.id}/void`)).status).toBe(400)
    expect(await balance(w.id)).toBe('50')
  })

  it('leaves lines of price types the wallet does not allow to be paid in money', async () => {
    const c = await customer(h)
    const w = await newWallet(c.id, { initial_credits_to_load: '100', config: { allowed_price_types: ['USAGE'] } })
    const invoice = await finalizedInvoice(c.id, '40.00', '25.00')
    expect(invoice.line_items.map((l: any) => l.prepaid_credits_applied)).toEqual(['40', '0'])
    expect(invoice).toMatchObject({ total_prepaid_credits_applied: '40', amount_due: '25' })
    expect(await balance(w.id)).toBe('60')
  })

  it('converts through conversion_rate: 10 credits worth 2.50 each pay 25.00', async () => {
    const c = await customer(h)
    const w = await newWallet(c.id, { initial_credits_to_load: '10', conversion_rate: '2.5' })
    const invoice = await finalizedInvoice(c.id, '40.00', '0.00')
    expect(invoice).toMatchObject({ total_prepaid_credits_applied: '25', amount_due: '15' })
    expect(await balance(w.id)).toBe('0')
  })
})

describe('credits bought by invoice', () => {
  it('are pending until the invoice is paid, then count', async () => {
    const c = await customer(h)
    const w = await newWallet(c.id, { topup_conversion_rate: '1.5' })
    const { wallet_transaction: t, invoice_id } = await topUp(w.id, { credits_to_add: '40', transaction_reason: 'PURCHASED_CREDIT_INVOICED' })
    expect(t).toMatchObject({ transaction_status: 'pending', reference_type: 'INVOICE', reference_id: invoice_id, amount: '60' })
    expect(await balance(w.id)).toBe('0')
    expect(await ok('GET', `/v1/invoices/${invoice_id}`)).toMatchObject({ invoice_type: 'CREDIT', invoice_status: 'FINALIZED', billing_reason: 'MANUAL', total: '60', amount_due: '60', total_prepaid_credits_applied: '0' })
    await ok('PUT', `/v1/invoices/${invoice_id}/payment`, { payment_status: 'SUCCEEDED' })
    expect(await ok('GET', `/v1/wallets/${w.id}`)).toMatchObject({ credit_balance: '40', credits_available_breakdown: { free: '0', purchased: '40' } })
    expect((await ledger(w.id))[0].transaction_status).toBe('completed')
  })

  it('fail when their invoice is voided, and hold the wallet open until then', async () => {
    const c = await customer(h)
    const w = await newWallet(c.id)
    const { invoice_id } = await topUp(w.id, { credits_to_add: '40', transaction_reason: 'PURCHASED_CREDIT_INVOICED' })
    const refused = await h.http('POST', `/v1/wallets/${w.id}/terminate`)
    expect(refused.status).toBe(400)
    expect(refused.body.details).toEqual({ invoice_ids: [invoice_id] })
    await ok('POST', `/v1/invoices/${invoice_id}/void`)
    expect((await ledger(w.id)).map((t: any) => t.transaction_status)).toEqual(['failed'])
    expect(await balance(w.id)).toBe('0')
    expect((await ok('POST', `/v1/wallets/${w.id}/terminate`)).wallet_status).toBe('closed')
  })
})

describe('auto top-up by invoice (rule 10)', () => {
  const topupInvoices = async (customerId: string) =>
    (await ok('GET', `/v1/invoices?customer_id=${customerId}&billing_reason=WALLET_AUTO_TOPUP&order=asc`)).items.map((i: any) => [i.total, i.invoice_status, i.payment_status])

  it('starts no second top-up while the first is unpaid, and the next after it is paid', async () => {
    const c = await customer(h)
    const w = await newWallet(c.id, { initial_credits_to_load: '30', auto_topup: { enabled: true, threshold: 20, amount: 50, invoicing: true } })
    await debit(w.id, '15') // 15: at or below 20, an invoice for 50 credits
    await debit(w.id, '5') // 10: still low, but that invoice is unpaid
    expect(await topupInvoices(c.id)).toEqual([['50', 'FINALIZED', 'PENDING']])
    const [pending] = (await ledger(w.id)).filter((t: any) => t.auto_topup)
    expect(pending).toMatchObject({ transaction_reason: 'PURCHASED_CREDIT_INVOICED', transaction_status: 'pending', credit_amount: '50' })
    await ok('PUT', `/v1/invoices/${pending.reference_id}/payment`, { payment_status: 'SUCCEEDED' })
    expect(await balance(w.id)).toBe('60')
    expect(await topupInvoices(c.id)).toHaveLength(1)
    await debit(w.id, '45') // 15 again: a new top-up may start
    expect(await topupInvoices(c.id)).toEqual([
      ['50', 'FINALIZED', 'SUCCEEDED'],
      ['50', 'FINALIZED', 'PENDING'],
    ])
  })

  it('fires the next top-up at once when a paid one leaves the balance still low', async () => {
    const c = await customer(h)
    const w = await newWallet(c.id, { initial_credits_to_load: '10', auto_topup: { enabled: true, threshold: 20, amount: 5, invoicing: true } })
    await debit(w.id, '1') // 9: an invoice for 5
    const [first] = (await ledger(w.id)).filter((t: any) => t.auto_topup)
    await ok('PUT', `/v1/invoices/${first.reference_id}/payment`, { payment_status: 'SUCCEEDED' })
    // 14 after the payment: still at or below 20, so the payment itself starts the next one.
    expect(await balance(w.id)).toBe('14')
    expect(await topupInvoices(c.id)).toEqual([
      ['5', 'FINALIZED', 'SUCCEEDED'],
      ['5', 'FINALIZED', 'PENDING'],
    ])
  })
})

describe('the real-time balance', () => {
  it('is the balance less unbilled usage of the current period and unpaid invoices', async () => {
    const meterId = await readyMeter(h, { name: 'calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { prices: [usagePrice(meterId, '0.5')] })
    const c = await customer(h)
    await ok('POST', '/v1/subscriptions', { customer_id: c.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2025-03-01T00:00:00Z' }, 201)
    const w = await newWallet(c.id, { initial_credits_to_load: '100', config: { allowed_price_types: ['USAGE'] } })
    await send(h, Array.from({ length: 25 }, (_, i) => ({ id: `rt-${i}`, at: '2025-03-05T00:00:00Z' })), { customer: c.external_id, name: 'api_call' })
    // A fixed charge the wallet may not pay: 30.00 stays unpaid.
    await finalizedInvoice(c.id, '0.00', '30.00')
    const rt = await ok('GET', `/v1/wallets/${w.id}/balance/real-time`)
    // 100 − 25 × 0.50 − 30 = 57.50
    expect(rt).toMatchObject({ balance: '100.00', credit_balance: '100', current_period_usage: '12.50', unpaid_invoices_amount: '30.00', real_time_balance: '57.50', real_time_credit_balance: '57.5' })
    // Answered from a body built once per cached object (http/prebuilt-json.ts): the bytes Koa sent for the object.
    const actor = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production, keyId: 'test', roles: ['read' as const] }
    const res = await fetch(`${h.baseUrl}/v1/wallets/${w.id}/balance/real-time`, { headers: { 'x-api-key': h.key } })
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await res.text()).toBe(JSON.stringify(toWire(await ongoingBalanceOf(h.running.deps, actor, w.id))))
    // A top-up is seen by the next read, cache and built body notwithstanding.
    await topUp(w.id, { credits_to_add: '10' })
    expect(await ok('GET', `/v1/wallets/${w.id}/balance/real-time`)).toMatchObject({ balance: '110.00', real_time_balance: '67.50' })
  })
})

describe('ongoing-balance and feature alerts', () => {
  const alertsJob = () => runNamedJob(h, 'wallet-balance-alerts')
  const events = async (walletId: string) =>
    (await h.running.deps.sql<{ event_type: string; payload: any }[]>`SELECT event_type, payload FROM webhook_events
      WHERE entity_id = ${walletId} AND (event_type LIKE 'wallet.ongoing_balance.%' OR event_type = 'feature.wallet_balance.alert') ORDER BY created_at, id`).map((e) => [
      e.event_type,
      e.payload.alert.state,
      e.payload.alert.current_balance,
      e.payload.feature?.id ?? null,
    ])

  it('moves as usage is metered and when credits arrive, one event per crossing', async () => {
    const meterId = await readyMeter(h, { name: 'tokens', event_name: 'token_used', aggregation: { type: 'COUNT' } })
    const feature = await ok('POST', '/v1/features', { name: 'Tokens', type: 'metered', meter_id: meterId, alert_settings: { alert_enabled: true, critical: { condition: 'below', threshold: 60 } } }, 201)
    const p = await plan(h, { prices: [usagePrice(meterId, '0.5')], entitlements: [{ feature_id: feature.id, usage_reset_period: 'MONTHLY' }] })
    const c = await customer(h)
    await ok('POST', '/v1/subscriptions', { customer_id: c.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2025-03-01T00:00:00Z' }, 201)
    const alert_settings = { alert_enabled: true, warning: { threshold: 80 }, critical: { threshold: 50 } }
    const w = await newWallet(c.id, { initial_credits_to_load: '100', alert_settings })
    let n = 0
    const use = (count: number) => send(h, Array.from({ length: count }, () => ({ id: `oa-${n++}`, at: '2025-03-06T00:00:00Z' })), { customer: c.external_id, name: 'token_used' })

    await use(25) // ongoing 100 − 12.50 = 87.50: ok
    await alertsJob()
    expect(await events(w.id)).toEqual([])
    await use(20) // 77.50: below 80
    await alertsJob()
    await alertsJob() // nothing moved since: nothing new
    await use(60) // 47.50: below 50, and below the feature's 60
    await alertsJob()
    expect((await ok('GET', `/v1/wallets/${w.id}`)).ongoing_alert_state).toBe('in_alarm')
    await topUp(w.id, { credits_to_add: '100' }) // 147.50
    await alertsJob()
    expect(await events(w.id)).toEqual([
      ['wallet.ongoing_balance.dropped', 'warning', 77.5, null],
      ['wallet.ongoing_balance.dropped', 'in_alarm', 47.5, null],
      ['feature.wallet_balance.alert', 'in_alarm', 47.5, feature.id],
      ['wallet.ongoing_balance.recovered', 'ok', 147.5, null],
      ['feature.wallet_balance.alert', 'ok', 147.5, feature.id],
    ])
    // The credit balance never crossed a threshold: 100, then 200.
    expect((await ok('GET', `/v1/wallets/${w.id}`)).alert_state).toBe('ok')
  })
})
