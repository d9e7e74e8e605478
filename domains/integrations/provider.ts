// What a payment provider adapter does for us: push a finalized invoice (charge the saved payment
// method, or hand back a hosted payment address), check its notifications' signatures and read the
// payments they report. One implementation per payment provider_type (stripe.ts); QuickBooks is a
// connection too, but an accounting system that receives records and collects nothing (quickbooks.ts); an s3
// connection holds a bucket's credentials for scheduled exports and talks to no provider here (s3-credentials.ts).
import type { SignatureCheck } from '../../core/signatures.ts'
import type { Decimal } from '../../core/money.ts'

export const PROVIDER_TYPES = ['stripe', 'quickbooks', 's3'] as const
export type ProviderType = (typeof PROVIDER_TYPES)[number]
/** The connections that collect: finalized invoices are pushed to them to be paid, their notifications pay ours. */
export const PAYMENT_PROVIDER_TYPES = ['stripe'] as const satisfies readonly ProviderType[]
export type PaymentProviderType = (typeof PAYMENT_PROVIDER_TYPES)[number]

/** A connection's secrets per provider: those it cannot work without, and the others it takes. */
export const SECRET_FIELDS: Record<ProviderType, { required: readonly string[]; optional: readonly string[] }> = {
  stripe: { required: ['secret_key', 'webhook_secret'], optional: ['publishable_key', 'account_id'] },
  quickbooks: { required: ['client_id', 'client_secret', 'refresh_token', 'realm_id'], optional: ['token_url', 'webhook_verifier_token'] },
  s3: { required: ['aws_access_key_id', 'aws_secret_access_key'], optional: ['aws_session_token'] },
}

export interface ProviderSecrets {
  secret_key: string
  webhook_secret: string
  publishable_key?: string
  account_id?: string
}

export interface ProviderConnection {
  id: string
  provider_type: ProviderType
  /** The provider's API root; null: its public one. */
  api_base_url: string | null
  secrets: ProviderSecrets
}

export interface InvoicePush {
  invoice: { id: string; number: string | null; currency: string; due_date: Date | null; description: string | null }
  /** What the provider invoice lists; they add up to what is still owed. */
  items: { description: string; amount: Decimal }[]
  customer: { id: string; name: string; email: string | null; provider_customer_id: string | null }
  now: Date
}

export interface PushResult {
  provider_invoice_id: string
  provider_customer_id: string
  collection_method: 'charge_automatically' | 'send_invoice'
  /** The provider's invoice status after the push, e.g. open or paid. */
  provider_status: string
  /** Where the customer pays; null when the saved payment method was charged. */
  checkout_url: string | null
  /** Why charging the saved payment method failed (the invoice stays open at the provider). */
  payment_error: string | null
}

/** A payment a notification reports, and how to find our invoice. */
interface ProviderPayment {
  invoice_id: string | null
  provider_invoice_id: string | null
  /** One per payment at the provider, whichever notification reports it. */
  reference: string
  amount: Decimal
  currency: string
}

/** A card to save at the provider for an invoice that asks for no money now (a trial's): a hosted setup page. */
export interface CardSetup {
  invoice: { id: string; currency: string }
  customer: InvoicePush['customer']
  success_url: string
  cancel_url: string | null
}

export interface SetupResult {
  provider_customer_id: string
  session_id: string
  checkout_url: string
}

/** A card setup the customer completed, as a notification reports it. */
interface CompletedSetup {
  invoice_id: string | null
  session_id: string
  setup_intent: string | null
  provider_customer_id: string | null
}

export interface ProviderNotification {
  id: string
  type: string
  payment: ProviderPayment | null
  setup?: CompletedSetup | null
}

export interface PaymentProvider {
  push(connection: ProviderConnection, push: InvoicePush): Promise<PushResult>
  /** Checks a notification's signature against the raw body; `now` in unix seconds. */
  verify(headers: Record<string, string | string[] | undefined>, rawBody: string, secrets: ProviderSecrets, now: number): SignatureCheck
  /** Reads a verified notification; undefined when it is not one. */
  parse(rawBody: string): ProviderNotification | undefined
  /** Opens a hosted page where the customer saves a card (Stripe Checkout in setup mode). */
  setupCard(connection: ProviderConnection, setup: CardSetup): Promise<SetupResult>
  /** The card of a completed setup becomes the customer's default: later invoices are charged with it. */
  saveCard(connection: ProviderConnection, setup: { setup_intent: string; provider_customer_id: string }): Promise<void>
  /** A short-lived hosted page where the customer updates its saved payment methods (Stripe's billing portal). */
  paymentMethodPage(connection: ProviderConnection, page: { provider_customer_id: string; return_url: string }): Promise<{ url: string }>
  /** Charges a pushed invoice's saved payment method again (dunning); a decline is an answer (payment_error), not a throw. */
  retryPayment(connection: ProviderConnection, providerInvoiceId: string, idempotencyKey: string): Promise<{ provider_status: string; payment_error: string | null }>
}

/** A provider call that failed: unreachable, refused or answered with an error. */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly type?: string,
  ) {
    super(message)
    this.name = 'ProviderError'
  }
}
