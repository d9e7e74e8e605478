// Two customers with billing to show in the customer portal, over the public API: "ours" with a metered
// feature and its limit, usage, a finalized invoice, a credit note, a draft invoice (not to be shown) and a
// wallet with transactions; "theirs" with an invoice, a subscription and a wallet of its own, whose ids a
// portal session of ours must never reach. Used by the portal's API and browser tests.
import type { Harness } from './harness.ts'

async function ok(h: Harness, method: string, path: string, body?: unknown): Promise<any> {
  const res = await h.http(method, path, { body })
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

export interface PortalSeed {
  ours: any
  theirs: any
  feature: any
  invoice: any
  draft: any
  creditNote: any
  wallet: any
  subscription: any
  theirInvoice: any
  theirCreditNote: any
  theirWallet: any
  theirSubscription: any
}

async function invoiceFor(h: Harness, customerId: string, total: string, finalize: boolean): Promise<any> {
  const invoice = await ok(h, 'POST', '/v1/invoices', { customer_id: customerId, currency: 'USD', subtotal: total, total, amount_due: total, line_items: [{ display_name: 'Pro plan', amount: total, quantity: '1' }] })
  if (finalize) await ok(h, 'POST', `/v1/invoices/${invoice.id}/finalize`)
  return invoice
}

/** `ourName` and `theirName`: customer names (the XSS probes go here). */
export async function seedPortal(h: Harness, { ourName = 'Acme Analytics', theirName = 'Globex' } = {}, suffix = String(Date.now())): Promise<PortalSeed> {
  const meter = await ok(h, 'POST', '/v1/meters', { name: 'API calls', event_name: `api.call.${suffix}`, aggregation: { type: 'COUNT' } })
  const feature = await ok(h, 'POST', '/v1/features', { name: 'API calls', type: 'metered', meter_id: meter.id, unit_singular: 'call', unit_plural: 'calls' })
  const plan = await ok(h, 'POST', '/v1/plans', { name: 'Pro', prices: [{ currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', invoice_cadence: 'ADVANCE', amount: '49' }] })
  await ok(h, 'POST', '/v1/entitlements', { plan_id: plan.id, feature_id: feature.id, usage_limit: 20, usage_reset_period: 'MONTHLY' })

  const ours = await ok(h, 'POST', '/v1/customers', { external_id: `ours-${suffix}`, name: ourName, email: 'billing@acme.test' })
  const theirs = await ok(h, 'POST', '/v1/customers', { external_id: `theirs-${suffix}`, name: theirName, email: 'billing@globex.test' })
  const start = new Date(h.running.deps.clock.now().getTime() - 10 * 86_400_000).toISOString()
  const subscription = await ok(h, 'POST', '/v1/subscriptions', { customer_id: ours.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY', start_date: start })
  const theirSubscription = await ok(h, 'POST', '/v1/subscriptions', { customer_id: theirs.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY', start_date: start })
  const now = h.running.deps.clock.now().getTime()
  // 13 calls over the last ten days, against a limit of 20.
  const events = [9.5, 8.5, 8.5, 7.5, 6.5, 5.5, 5.5, 5.5, 4.5, 3.5, 2.5, 1.5, 0.5].map((daysAgo, i) => ({ event_id: `portal-${suffix}-${i}`, event_name: meter.event_name, external_customer_id: ours.external_id, timestamp: new Date(now - daysAgo * 86_400_000).toISOString(), properties: {} }))
  events.push({ event_id: `portal-${suffix}-theirs`, event_name: meter.event_name, external_customer_id: theirs.external_id, timestamp: new Date(now - 3_600_000).toISOString(), properties: {} })
  await ok(h, 'POST', '/v1/events/bulk', { events })
  // A new meter's usage reads answer 503 until its first backfill is done.
  for (let i = 0; i < 300; i++) {
    const m = await ok(h, 'GET', `/v1/meters/${meter.id}`)
    if (m.ready_revision === m.revision) break
    await new Promise((r) => setTimeout(r, 100))
  }

  const invoice = await invoiceFor(h, ours.id, '49.00', true)
  const draft = await invoiceFor(h, ours.id, '12.00', false)
  const note = await ok(h, 'POST', '/v1/creditnotes', { invoice_id: invoice.id, reason: 'BILLING_ERROR', memo: 'Goodwill', line_items: [{ invoice_line_item_id: invoice.line_items[0].id, amount: '4.00' }] })
  const creditNote = note.credit_note_status === 'DRAFT' ? await ok(h, 'POST', `/v1/creditnotes/${note.id}/finalize`) : note
  const wallet = await ok(h, 'POST', '/v1/wallets', { customer_id: ours.id, currency: 'USD', conversion_rate: '1', initial_credits_to_load: '50' })
  await ok(h, 'POST', `/v1/wallets/${wallet.id}/top-up`, { credits_to_add: '25', transaction_reason: 'FREE_CREDIT_GRANT' })
  const theirInvoice = await invoiceFor(h, theirs.id, '99.00', true)
  const theirNote = await ok(h, 'POST', '/v1/creditnotes', { invoice_id: theirInvoice.id, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: theirInvoice.line_items[0].id, amount: '9.00' }] })
  const theirCreditNote = theirNote.credit_note_status === 'DRAFT' ? await ok(h, 'POST', `/v1/creditnotes/${theirNote.id}/finalize`) : theirNote
  const theirWallet = await ok(h, 'POST', '/v1/wallets', { customer_id: theirs.id, currency: 'USD', conversion_rate: '1', initial_credits_to_load: '7' })
  return { ours, theirs, feature, invoice, draft, creditNote, wallet, subscription, theirInvoice, theirCreditNote, theirWallet, theirSubscription }
}

/** Opens a portal session for a customer with the harness's admin key. */
export async function openSession(h: Harness, externalId: string): Promise<{ url: string; token: string; expires_at: string }> {
  return ok(h, 'GET', `/v1/customers/portal/${encodeURIComponent(externalId)}`)
}

/** A portal call with a session token (and no API key). */
export const asCustomer = (h: Harness, token: string, method: string, path: string, body?: unknown) =>
  h.http(method, `/v1/customer/portal${path}`, { key: null, headers: { 'x-session-token': token }, body })
