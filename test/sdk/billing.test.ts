// Flexprice's SDK against invoicing and credits: one-off invoices and their payments, credit notes,
// coupons, tax rates and associations, credit grants, wallets and their ledger — only SDK calls.
import { beforeAll, describe, expect, it } from 'vitest'
import type { Flexprice } from '@flexprice/sdk'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'
import { runNamedJob } from '../wallets.ts'

const t = twoTenants()
let fp: Flexprice
let customerId: string

beforeAll(async () => {
  fp = sdk(t.h)
  customerId = (await fp.customers.createCustomer({ externalId: 'sdk-bill-1', name: 'Billed', email: 'ap@billed.test' })).id!
})

const oneOff = (amount: string) => ({
  customerId,
  currency: 'USD',
  subtotal: amount,
  total: amount,
  amountDue: amount,
  lineItems: [{ displayName: 'Consulting', amount, quantity: '1' }],
})

describe('invoices and payments', () => {
  it('creates, reads, searches, updates, finalizes and pays a one-off invoice; prints its PDF; sums it up for the customer', async () => {
    const inv = await fp.invoices.createInvoice({ ...oneOff('120.00'), description: 'March work', idempotencyKey: 'sdk-inv-1' })
    expect(inv).toMatchObject({ customerId, invoiceStatus: 'DRAFT', invoiceType: 'ONE_OFF', total: '120', amountDue: '120' })
    expect((await fp.invoices.getInvoice(inv.id!)).lineItems?.map((l) => l.displayName)).toEqual(['Consulting'])
    expect((await fp.invoices.queryInvoice({ customerId, invoiceStatus: ['DRAFT'] })).items?.map((i) => i.id)).toEqual([inv.id])
    expect(await fp.invoices.updateInvoice(inv.id!, { metadata: { po: 'PO-7' } })).toMatchObject({ metadata: { po: 'PO-7' } })

    await fp.invoices.finalizeInvoice(inv.id!)
    expect((await fp.invoices.getInvoice(inv.id!)).invoiceStatus).toBe('FINALIZED')
    expect((await fp.invoices.triggerInvoiceCommsWebhook(inv.id!)).message).toBeTruthy()

    const partly = await fp.invoices.updateInvoicePaymentStatus(inv.id!, { paymentStatus: 'PENDING', amount: '20' })
    expect(partly).toMatchObject({ paymentStatus: 'PENDING', amountPaid: '20', amountRemaining: '100' })

    const pdf = await new Response(await fp.invoices.getInvoicePdf(inv.id!)).arrayBuffer()
    expect(Buffer.from(pdf).subarray(0, 5).toString()).toBe('%PDF-')

    const summary = await fp.invoices.getCustomerInvoiceSummary(customerId)
    expect(summary.customerId).toBe(customerId)
    expect(summary.summaries?.find((s) => s.currency === 'USD')).toMatchObject({ totalInvoiceCount: 1, unpaidInvoiceCount: 1, totalUnpaidAmount: '100', totalRevenueAmount: '120' })

    const paid = await fp.invoices.updateInvoicePaymentStatus(inv.id!, { paymentStatus: 'SUCCEEDED' })
    expect(paid).toMatchObject({ paymentStatus: 'SUCCEEDED', amountRemaining: '0' })

    // Each payment is a record: 20 first, then the 100 that remained.
    const payments = await fp.payments.listPayments({ destinationId: inv.id!, order: 'asc' })
    expect(payments.items?.map((p) => [p.amount, p.paymentStatus, p.paymentMethodType, p.invoiceNumber])).toEqual([
      ['20', 'SUCCEEDED', 'OFFLINE', paid.invoiceNumber],
      ['100', 'SUCCEEDED', 'OFFLINE', paid.invoiceNumber],
    ])
    expect(await fp.payments.getPayment(payments.items![0].id!)).toMatchObject({ destinationType: 'INVOICE', destinationId: inv.id, currency: 'USD' })
  })

  it("recalculates a subscription's draft invoice and finalizes it (finalize=true)", async () => {
    const plan = await fp.plans.createPlan({ name: 'Monthly 10' })
    await fp.prices.createPrice({ entityType: 'PLAN', entityId: plan.id!, currency: 'USD', type: 'FIXED', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ADVANCE', priceUnitType: 'FIAT', amount: '10' })
    const sub = await fp.subscriptions.createSubscription({ customerId, planId: plan.id!, currency: 'USD', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY' })
    // Subscription invoices come from the worker's billing run (every 5 minutes in production, not a client call): run it now.
    await runNamedJob(t.h, 'billing-run')
    const [draft] = (await fp.invoices.queryInvoice({ subscriptionId: sub.id })).items!
    expect(draft).toMatchObject({ invoiceStatus: 'DRAFT', billingReason: 'SUBSCRIPTION_CREATE', total: '10' })
    const again = await fp.invoices.recalculateInvoice(draft.id!)
    expect(again).toMatchObject({ id: draft.id, invoiceStatus: 'DRAFT', total: '10' })
    const final = await fp.invoices.recalculateInvoice(draft.id!, true)
    expect(final).toMatchObject({ id: draft.id, invoiceStatus: 'FINALIZED' })
    await fp.subscriptions.cancelSubscription(sub.id!, { cancellationType: 'immediate' })
  })

  it('voids a draft', async () => {
    const inv = await fp.invoices.createInvoice(oneOff('10.00'))
    await fp.invoices.voidInvoice(inv.id!)
    expect((await fp.invoices.getInvoice(inv.id!)).invoiceStatus).toBe('VOIDED')
  })

  it('refunds part of a paid invoice with a credit note, finalized, and voids a draft note', async () => {
    const inv = await fp.invoices.createInvoice(oneOff('50.00'))
    await fp.invoices.finalizeInvoice(inv.id!)
    await fp.invoices.updateInvoicePaymentStatus(inv.id!, { paymentStatus: 'SUCCEEDED' })
    const line = (await fp.invoices.getInvoice(inv.id!)).lineItems![0]

    // The SDK sends process_credit_note: true unless told otherwise: the note is finalized at once.
    const note = await fp.creditNotes.createCreditNote({ invoiceId: inv.id!, reason: 'SERVICE_ISSUE', memo: 'outage', lineItems: [{ invoiceLineItemId: line.id!, amount: '15.00' }] })
    expect(note).toMatchObject({ invoiceId: inv.id, creditNoteStatus: 'FINALIZED', creditNoteType: 'REFUND', totalAmount: '15' })
    expect((await fp.creditNotes.getCreditNote(note.id!)).lineItems?.map((l) => l.amount)).toEqual(['15'])

    const draft = await fp.creditNotes.createCreditNote({ invoiceId: inv.id!, reason: 'DUPLICATE', processCreditNote: false, lineItems: [{ invoiceLineItemId: line.id!, amount: '5.00' }] })
    expect(draft.creditNoteStatus).toBe('DRAFT')
    expect((await fp.creditNotes.voidCreditNote(draft.id!)).creditNoteStatus).toBe('VOIDED')
    const again = await fp.creditNotes.createCreditNote({ invoiceId: inv.id!, reason: 'DUPLICATE', processCreditNote: false, lineItems: [{ invoiceLineItemId: line.id!, amount: '5.00' }] })
    expect((await fp.creditNotes.processCreditNote(again.id!)).creditNoteStatus).toBe('FINALIZED')
  })
})

describe('coupons and taxes', () => {
  it('creates, reads, searches, renames and deletes a coupon', async () => {
    const c = await fp.coupons.createCoupon({ name: '10% off', type: 'percentage', cadence: 'repeated', durationInPeriods: 3, percentageOff: '10' })
    expect(c).toMatchObject({ name: '10% off', type: 'percentage', cadence: 'repeated', percentageOff: '10', durationInPeriods: 3 })
    expect((await fp.coupons.getCoupon(c.id!)).id).toBe(c.id)
    expect((await fp.coupons.queryCoupon({ couponIds: [c.id!] })).items?.map((x) => x.id)).toEqual([c.id])
    expect(await fp.coupons.updateCoupon(c.id!, { name: 'Ten off' })).toMatchObject({ name: 'Ten off' })
    await fp.coupons.deleteCoupon(c.id!)
    expect((await fp.coupons.getCoupon(c.id!)).status).toBe('deleted')
  })

  it('creates, reads, updates and deletes a tax rate, and associates it with a customer', async () => {
    const rate = await fp.taxRates.createTaxRate({ name: 'VAT', code: 'VAT19', taxRateType: 'percentage', percentageValue: '19', scope: 'INTERNAL' })
    expect(rate).toMatchObject({ code: 'VAT19', percentageValue: '19', taxRateType: 'percentage' })
    expect((await fp.taxRates.getTaxRate(rate.id!)).id).toBe(rate.id)
    expect(await fp.taxRates.updateTaxRate(rate.id!, { description: 'German VAT' })).toMatchObject({ description: 'German VAT' })

    const assoc = await fp.taxAssociations.createTaxAssociation({ taxRateCode: 'VAT19', entityType: 'customer', entityId: customerId, priority: 1, currency: 'usd' })
    expect(assoc).toMatchObject({ taxRateId: rate.id, entityType: 'customer', entityId: customerId, priority: 1, autoApply: true })
    expect((await fp.taxAssociations.getTaxAssociation(assoc.id!)).id).toBe(assoc.id)
    expect((await fp.taxAssociations.listTaxAssociations('customer', customerId)).items?.map((a) => a.id)).toEqual([assoc.id])
    expect(await fp.taxAssociations.updateTaxAssociation(assoc.id!, { priority: 2, metadata: { source: 'sdk' } })).toMatchObject({ priority: 2, metadata: { source: 'sdk' } })
    expect((await fp.taxAssociations.deleteTaxAssociation(assoc.id!)).status).toBe('deleted')

    await fp.taxRates.deleteTaxRate(rate.id!)
    expect((await fp.taxRates.getTaxRate(rate.id!)).status).toBe('deleted')
  })

  it('lists tax rates: the SDK expects a bare array where Flexprice (and this service) answer a page', async () => {
    const err = await failure(fp.taxRates.getTaxRates({ taxrateCodes: ['VAT19'] }))
    expect(err.name).toBe('ResponseValidationError')
    expect(JSON.parse(err.body)).toHaveProperty('items')
  })
})

describe('credit grants and wallets', () => {
  it("creates, reads, updates and deletes a plan's credit grant", async () => {
    const plan = await fp.plans.createPlan({ name: 'With credits' })
    const g = await fp.creditGrants.createCreditGrant({ name: 'Welcome', scope: 'PLAN', planId: plan.id, credits: '100', cadence: 'ONETIME', expirationType: 'NEVER' })
    expect(g).toMatchObject({ name: 'Welcome', planId: plan.id, credits: '100', cadence: 'ONETIME' })
    expect((await fp.creditGrants.getCreditGrant(g.id!)).id).toBe(g.id)
    expect((await fp.creditGrants.getPlanCreditGrants(plan.id!)).items?.map((x) => x.id)).toEqual([g.id])
    expect(await fp.creditGrants.updateCreditGrant(g.id!, { name: 'Welcome credits' })).toMatchObject({ name: 'Welcome credits' })
    // A later end is not offered: refused, not ignored.
    expect((await failure(fp.creditGrants.deleteCreditGrant(g.id!, { effectiveDate: new Date(Date.now() + 86400e3).toISOString() }))).statusCode).toBe(400)
    await fp.creditGrants.deleteCreditGrant(g.id!)
    expect((await fp.creditGrants.getCreditGrant(g.id!)).status).toBe('deleted')
  })

  it('creates a wallet (200, as Flexprice documents), tops it up, reads balances and the ledger, finds it by customer, pays an invoice from it, terminates it', async () => {
    const owed = await fp.invoices.createInvoice(oneOff('130.00'))
    await fp.invoices.finalizeInvoice(owed.id!)
    const w = await fp.wallets.createWallet({ customerId, currency: "USD", initialCreditsToLoad: "25" })
    expect(w).toMatchObject({ customerId, currency: 'USD', walletStatus: 'active', creditBalance: '25' })
    expect((await fp.wallets.getWallet(w.id!)).id).toBe(w.id)

    const topped = await fp.wallets.topUpWallet(w.id!, { creditsToAdd: '75', transactionReason: 'FREE_CREDIT_GRANT', idempotencyKey: 'sdk-top-1' })
    expect(topped.wallet).toMatchObject({ id: w.id, creditBalance: '100' })
    expect(topped.walletTransaction).toMatchObject({ creditAmount: '75', transactionReason: 'FREE_CREDIT_GRANT' })

    expect(await fp.wallets.getWalletBalance(w.id!)).toMatchObject({ id: w.id, creditBalance: '100' })
    expect(await fp.wallets.updateWallet(w.id!, { name: 'Main', metadata: { owner: 'ap' } })).toMatchObject({ name: 'Main' })

    const ledger = await fp.wallets.getWalletTransactions({ idPathParameter: w.id!, limit: 10 })
    expect(ledger.items?.map((x) => x.creditAmount).sort()).toEqual(['25', '75'])
    const found = await fp.wallets.queryWalletTransaction({ referenceType: undefined, transactionReason: 'FREE_CREDIT_GRANT' })
    expect(found.items?.map((x) => x.walletId)).toContain(w.id)

    expect((await fp.wallets.getWalletsByCustomerId(customerId)).map((x) => x.id)).toEqual([w.id])
    expect((await fp.wallets.getCustomerWallets({ lookupKey: 'sdk-bill-1' })).map((x) => x.id)).toEqual([w.id])
    expect((await fp.wallets.getCustomerWallets({ id: customerId })).map((x) => x.id)).toEqual([w.id])
    expect((await fp.wallets.queryWallet({ walletIds: [w.id!] })).items?.map((x) => x.id)).toEqual([w.id])

    // The invoice finalized before the wallet had credits is paid from it now: 100 credits of 1 USD pay 100 of 130.
    expect((await fp.invoices.attemptInvoicePayment(owed.id!)).message).toMatch(/100\.00/)
    expect(await fp.invoices.getInvoice(owed.id!)).toMatchObject({ amountPaid: '100', amountRemaining: '30', paymentStatus: 'PENDING' })

    const closed = await fp.wallets.terminateWallet(w.id!)
    expect(closed.walletStatus).toBe('closed')
  })
})
