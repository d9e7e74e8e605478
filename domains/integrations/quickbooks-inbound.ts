// QuickBooks' webhooks (POST /v1/webhooks/quickbooks/{tenant_id}/{environment_id}): a payment received in
// QuickBooks against an invoice we pushed there is recorded against our invoice. The notification is checked with
// the connection's webhook_verifier_token (core/quickbooks-webhooks.ts), names the changed Payments only, and each
// is read back from QuickBooks for what it pays. Each payment is recorded once per invoice it pays (a resent or
// updated notification changes nothing); payments we pushed there ourselves are not taken back.
import { applyPayment } from '../../core/billing/payments.ts'
import { AppError, serviceUnavailable, validationError } from '../../core/errors.ts'
import { changedPayments, paymentApplications, verifyIntuitSignature } from '../../core/quickbooks-webhooks.ts'
import type { Decimal } from '../../core/money.ts'
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { unseal } from '../../infra/secrets.ts'
import { paymentState, recordPayment } from '../invoicing/invoices/payments.ts'
import { lockInvoice } from '../invoicing/invoices/read.ts'
import { transaction } from '../records/service.ts'
import { open } from './accounting.ts'
import { recordOfExternal } from './accounting-store.ts'
import { ProviderError } from './provider.ts'
import * as qbo from './quickbooks.ts'
import type { Notification } from './service.ts'
import * as store from './store.ts'

interface PaymentOutcome {
  payment_id: string
  invoice_id?: string
  outcome: string
}

const header = (headers: Notification['headers'], name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** One QuickBooks payment applied to one of our invoices, once (the provider event's id is the pair). */
async function recordApplication(deps: Deps, scope: Scope, connection: store.ConnectionRow, paymentId: string, currency: string | null, application: { invoice_ref: string; amount: Decimal }): Promise<PaymentOutcome> {
  const invoiceId = await recordOfExternal(deps.sql, connection.id, 'invoice', application.invoice_ref)
  if (!invoiceId) return { payment_id: paymentId, outcome: `unmatched: QuickBooks invoice ${application.invoice_ref} is not one we pushed` }
  const now = deps.clock.now()
  const reference = `${paymentId}:${application.invoice_ref}`
  return transaction(deps, async (tx) => {
    const event = await store.receiveEvent(tx, scope, connection.id, { id: `payment:${reference}`, type: 'Payment' }, now)
    if (!event) return { payment_id: paymentId, invoice_id: invoiceId, outcome: 'duplicate' }
    const invoice = await lockInvoice(tx, scope, invoiceId)
    let outcome = 'payment_recorded'
    if (currency && currency !== invoice.currency) outcome = `not_applied: paid in ${currency}, invoiced in ${invoice.currency}`
    else {
      try {
        const status = applyPayment(paymentState(invoice), application.amount, now).payment_status
        const source = { method: 'OFFLINE' as const, gateway: 'quickbooks', reference: paymentId }
        await recordPayment(deps, tx, scope, { by: `quickbooks:${paymentId}`, at: now }, invoiceId, { payment_status: status, amount: application.amount.toFixed() }, source)
      } catch (err) {
        // Kept with the reason: the invoice cannot take it (voided, already paid) and QuickBooks would not resend it anyway.
        if (!(err instanceof AppError)) throw err
        outcome = `not_applied: ${err.message}`
      }
    }
    await store.settleEvent(tx, event, outcome, invoiceId, outcome === 'payment_recorded' ? reference : null)
    return { payment_id: paymentId, invoice_id: invoiceId, outcome }
  })
}

/** QuickBooks unreachable or refusing: 503, so Intuit sends the notification again later (what was recorded stays once). */
async function reaching<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    if (err instanceof ProviderError) throw serviceUnavailable(`reading the payment from QuickBooks failed: ${err.message}`)
    throw err
  }
}

export async function receiveQuickbooksNotification(deps: Deps, input: Notification): Promise<{ received: true; payments: PaymentOutcome[] }> {
  const scope: Scope = { tenantId: input.tenantId, environmentId: input.environmentId }
  const connection = await store.connectionAt(deps.sql, scope, 'quickbooks')
  if (!connection) throw new AppError('not_found', 'no quickbooks connection receives notifications at this address', { provider: 'quickbooks' })
  const secrets = unseal<qbo.QuickbooksSecrets>(deps.config, connection.id, connection.encrypted_secret_data)
  if (!secrets.webhook_verifier_token) {
    throw new AppError('permission_denied', "the quickbooks connection has no webhook_verifier_token to check notifications with: add it to the connection's secrets", { reason: 'no verifier token' }, { status: 401 })
  }
  const rawBody = input.rawBody ?? ''
  const check = verifyIntuitSignature(header(input.headers, 'intuit-signature'), rawBody, secrets.webhook_verifier_token)
  if (check !== 'ok') throw new AppError('permission_denied', `the notification's intuit-signature is ${check}`, { reason: check }, { status: 401 })
  let body: unknown
  try {
    body = JSON.parse(rawBody)
  } catch {
    body = undefined
  }
  const ids = changedPayments(body, secrets.realm_id)
  if (!ids) throw validationError('body', 'is not a QuickBooks notification (eventNotifications)')
  if (ids.length === 0 || connection.sync_config.payment?.inbound === false) return { received: true, payments: [] }
  const company = await reaching(() => open(deps, connection))
  const payments: PaymentOutcome[] = []
  for (const id of ids) {
    if (await recordOfExternal(deps.sql, connection.id, 'payment', id)) {
      payments.push({ payment_id: id, outcome: 'ours: pushed to QuickBooks from here' })
      continue
    }
    const { currency, invoices } = paymentApplications(await reaching(() => qbo.read(company.session, 'Payment', id)))
    if (invoices.length === 0) payments.push({ payment_id: id, outcome: 'unmatched: it pays no invoice' })
    for (const application of invoices) payments.push(await recordApplication(deps, scope, connection, id, currency, application))
  }
  return { received: true, payments }
}
