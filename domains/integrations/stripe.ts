// Stripe as a payment provider, over its REST API (form-encoded, Bearer secret key) at the
// connection's api_base_url (https://api.stripe.com by default). A push creates a Stripe invoice with
// one item per line, finalizes it, and pays it with the customer's default payment method when there
// is one (collection_method charge_automatically); otherwise the invoice is sent (send_invoice) and its
// hosted_invoice_url is where the customer pays. Every write carries an Idempotency-Key derived from
// our invoice, so a push retried after a failure half-way finds what the first attempt made.
import { D, minorUnits, type Decimal } from '../../core/money.ts'
import { verifySignature } from '../../core/signatures.ts'
import { ProviderError, type CardSetup, type InvoicePush, type PaymentProvider, type ProviderConnection, type ProviderNotification, type PushResult, type SetupResult } from './provider.ts'
import { DAY_MS } from '../../core/periods.ts'

const STRIPE_API = 'https://api.stripe.com'
const TIMEOUT_MS = 15_000

type Params = Record<string, string | number | boolean | Record<string, string> | undefined>
/** The fields of Stripe's answers this adapter reads, unchecked until read (Stripe's JSON, or a proxy's). */
interface StripeObject {
  id?: unknown
  status?: unknown
  hosted_invoice_url?: unknown
  url?: unknown
  payment_method?: unknown
  default_source?: unknown
  invoice_settings?: { default_payment_method?: unknown }
  error?: { message?: string; type?: string }
}

/** The fields of a Stripe event this adapter reads. */
interface StripeEvent {
  id?: unknown
  type?: unknown
  data?: {
    object?: {
      id?: unknown
      currency?: unknown
      amount_paid?: unknown
      amount_received?: unknown
      invoice?: unknown
      mode?: unknown
      setup_intent?: unknown
      customer?: unknown
      metadata?: { meterbill_invoice_id?: unknown }
    }
  }
}

const isInteger = (v: unknown): v is number => Number.isInteger(v)

/** application/x-www-form-urlencoded with Stripe's nesting: metadata[key]=value. */
function form(params: Params): string {
  const out = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue
    if (typeof value === 'object') for (const [k, v] of Object.entries(value)) out.append(`${key}[${k}]`, v)
    else out.append(key, String(value))
  }
  return out.toString()
}

const scale = (currency: string): Decimal => new D(10).pow(minorUnits(currency))
/** Stripe amounts are integers in the currency's minor unit. */
const toMinor = (amount: Decimal, currency: string): string => amount.times(scale(currency)).toFixed(0)
const fromMinor = (amount: number | string, currency: string): Decimal => new D(amount).div(scale(currency))

async function call(connection: ProviderConnection, method: 'GET' | 'POST', path: string, params: Params = {}, idempotencyKey?: string): Promise<StripeObject> {
  const base = (connection.api_base_url ?? STRIPE_API).replace(/\/+$/, '')
  const headers: Record<string, string> = { authorization: `Bearer ${connection.secrets.secret_key}` }
  if (method === 'POST') headers['content-type'] = 'application/x-www-form-urlencoded'
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey
  let res: Response
  try {
    res = await fetch(`${base}${path}`, { method, headers, body: method === 'POST' ? form(params) : undefined, signal: AbortSignal.timeout(TIMEOUT_MS) })
  } catch (err) {
    throw new ProviderError(`stripe unreachable at ${base}: ${(err as Error).message}`)
  }
  const text = await res.text()
  let body: StripeObject = {}
  try {
    body = text ? (JSON.parse(text) as StripeObject) : {}
  } catch {
    // A proxy's HTML error page: the status says enough.
  }
  if (!res.ok) throw new ProviderError(`stripe ${method} ${path} answered ${res.status}: ${body.error?.message ?? (text.slice(0, 200) || 'no body')}`, res.status, body.error?.type)
  return body
}

/** The customer's Stripe customer: the mapped one, else one made once (its idempotency key is our customer's). */
async function customerOf(connection: ProviderConnection, customer: InvoicePush['customer']): Promise<string> {
  if (customer.provider_customer_id) return customer.provider_customer_id
  const made = await call(connection, 'POST', '/v1/customers', { name: customer.name, email: customer.email ?? undefined, metadata: { meterbill_customer_id: customer.id } }, `meterbill-${customer.id}-customer`)
  return made.id as string
}

async function push(connection: ProviderConnection, { invoice, items, customer, now }: InvoicePush): Promise<PushResult> {
  const key = (step: string) => `meterbill-${invoice.id}-${step}`
  const customerId = await customerOf(connection, customer)
  const stripeCustomer = await call(connection, 'GET', `/v1/customers/${encodeURIComponent(customerId)}`)
  const automatic = Boolean(stripeCustomer.invoice_settings?.default_payment_method ?? stripeCustomer.default_source)
  const currency = invoice.currency.toLowerCase()
  const daysUntilDue = invoice.due_date ? Math.max(0, Math.ceil((invoice.due_date.getTime() - now.getTime()) / DAY_MS)) : 30
  const created = await call(
    connection,
    'POST',
    '/v1/invoices',
    {
      customer: customerId,
      currency,
      collection_method: automatic ? 'charge_automatically' : 'send_invoice',
      days_until_due: automatic ? undefined : daysUntilDue,
      auto_advance: false,
      pending_invoice_items_behavior: 'exclude',
      description: invoice.description ?? (invoice.number ? `Invoice ${invoice.number}` : undefined),
      metadata: { meterbill_invoice_id: invoice.id, ...(invoice.number && { meterbill_invoice_number: invoice.number }) },
    },
    key('create'),
  )
  const createdId = created.id as string
  const stripeInvoice = encodeURIComponent(createdId)
  for (const [i, item] of items.entries()) {
    await call(connection, 'POST', '/v1/invoiceitems', { customer: customerId, invoice: createdId, currency, amount: toMinor(item.amount, invoice.currency), description: item.description }, key(`item-${i}`))
  }
  let final = await call(connection, 'POST', `/v1/invoices/${stripeInvoice}/finalize`, { auto_advance: false }, key('finalize'))
  let paymentError: string | null = null
  if (automatic) {
    try {
      final = await call(connection, 'POST', `/v1/invoices/${stripeInvoice}/pay`, {}, key('pay'))
    } catch (err) {
      // A declined card is an answer, not an outage: the invoice is at Stripe and its page takes another card.
      if (!(err instanceof ProviderError) || err.status !== 402) throw err
      paymentError = err.message
    }
  }
  const paid = final.status === 'paid'
  return {
    provider_invoice_id: createdId,
    provider_customer_id: customerId,
    collection_method: automatic ? 'charge_automatically' : 'send_invoice',
    provider_status: String(final.status),
    checkout_url: paid ? null : ((final.hosted_invoice_url as string | undefined) ?? null),
    payment_error: paymentError,
  }
}

/** invoice.paid (the Stripe invoice we pushed, paid in full), payment_intent.succeeded (an invoice's or a standalone payment) and checkout.session.completed of a card setup. */
function parse(rawBody: string): ProviderNotification | undefined {
  let event: StripeEvent
  try {
    event = JSON.parse(rawBody) as StripeEvent
  } catch {
    return undefined
  }
  const object = event?.data?.object
  if (typeof event?.id !== 'string' || typeof event.type !== 'string' || !object || typeof object !== 'object') return undefined
  const ours = typeof object.metadata?.meterbill_invoice_id === 'string' ? object.metadata.meterbill_invoice_id : null
  const currency = typeof object.currency === 'string' ? object.currency.toUpperCase() : undefined
  if (event.type === 'invoice.paid' && typeof object.id === 'string' && currency && isInteger(object.amount_paid)) {
    return { id: event.id, type: event.type, payment: { invoice_id: ours, provider_invoice_id: object.id, reference: object.id, amount: fromMinor(object.amount_paid, currency), currency } }
  }
  if (event.type === 'payment_intent.succeeded' && typeof object.id === 'string' && currency && isInteger(object.amount_received)) {
    // A payment intent of a Stripe invoice names it: its payment is the invoice's, told twice.
    const stripeInvoice = typeof object.invoice === 'string' ? object.invoice : null
    return { id: event.id, type: event.type, payment: { invoice_id: ours, provider_invoice_id: stripeInvoice, reference: stripeInvoice ?? object.id, amount: fromMinor(object.amount_received, currency), currency } }
  }
  if (event.type === 'checkout.session.completed' && object.mode === 'setup' && typeof object.id === 'string') {
    const text = (v: unknown) => (typeof v === 'string' ? v : null)
    return { id: event.id, type: event.type, payment: null, setup: { invoice_id: ours, session_id: object.id, setup_intent: text(object.setup_intent), provider_customer_id: text(object.customer) } }
  }
  return { id: event.id, type: event.type, payment: null }
}

/** A Checkout Session in setup mode: Stripe's page saves the customer's card, no money taken. */
async function setupCard(connection: ProviderConnection, { invoice, customer, success_url, cancel_url }: CardSetup): Promise<SetupResult> {
  const customerId = await customerOf(connection, customer)
  const session = await call(
    connection,
    'POST',
    '/v1/checkout/sessions',
    { mode: 'setup', customer: customerId, currency: invoice.currency.toLowerCase(), success_url, cancel_url: cancel_url ?? undefined, metadata: { meterbill_invoice_id: invoice.id } },
    `meterbill-${invoice.id}-setup`,
  )
  return { provider_customer_id: customerId, session_id: session.id as string, checkout_url: session.url as string }
}

async function saveCard(connection: ProviderConnection, { setup_intent, provider_customer_id }: { setup_intent: string; provider_customer_id: string }): Promise<void> {
  const intent = await call(connection, 'GET', `/v1/setup_intents/${encodeURIComponent(setup_intent)}`)
  if (typeof intent.payment_method !== 'string') throw new ProviderError(`setup intent ${setup_intent} holds no payment method`)
  await call(connection, 'POST', `/v1/customers/${encodeURIComponent(provider_customer_id)}`, { invoice_settings: { default_payment_method: intent.payment_method } }, `meterbill-${setup_intent}-default`)
}

async function retryPayment(connection: ProviderConnection, providerInvoiceId: string, idempotencyKey: string): Promise<{ provider_status: string; payment_error: string | null }> {
  try {
    const paid = await call(connection, 'POST', `/v1/invoices/${encodeURIComponent(providerInvoiceId)}/pay`, {}, idempotencyKey)
    return { provider_status: String(paid.status), payment_error: null }
  } catch (err) {
    if (!(err instanceof ProviderError) || err.status !== 402) throw err
    return { provider_status: 'open', payment_error: err.message }
  }
}

/** A billing portal session: Stripe's page where the customer updates its cards, back to `return_url` after. */
async function paymentMethodPage(connection: ProviderConnection, { provider_customer_id, return_url }: { provider_customer_id: string; return_url: string }): Promise<{ url: string }> {
  const session = await call(connection, 'POST', '/v1/billing_portal/sessions', { customer: provider_customer_id, return_url })
  if (typeof session.url !== 'string') throw new ProviderError('stripe answered a billing portal session without a url')
  return { url: session.url }
}

export const stripe: PaymentProvider = {
  push,
  setupCard,
  saveCard,
  retryPayment,
  paymentMethodPage,
  verify: (headers, rawBody, secrets, now) => {
    const header = headers['stripe-signature']
    return verifySignature(Array.isArray(header) ? header[0] : header, rawBody, secrets.webhook_secret, now)
  },
  parse,
}
