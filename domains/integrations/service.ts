// Payment provider connections (rule 16): CRUD with their secrets encrypted and never returned; the
// invoice-sync job that pushes finalized invoices to the connected provider (queued by the job, not by
// the finalize request, so an outage of the provider never fails a finalize; retried with backoff);
// and the provider's notifications, which pay our invoices through the invoices' payment path.
import { nextSyncAttempt } from '../../core/sync-retry.ts'
import { applyPayment } from '../../core/billing/payments.ts'
import { AppError, notFound, validationError } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import { sumMoney } from '../../core/money.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Tx } from '../../infra/postgres.ts'
import { deleteRecord, filterConditions, insertRecord, listRecords, requireRecord, updateRecord, type Audit } from '../../infra/records.ts'
import { seal, unseal } from '../../infra/secrets.ts'
import { type ListRequest, type Page, page } from '../../core/list.ts'
import { mergeInvoiceMetadata, paymentState, recordPayment } from '../invoicing/invoices/payments.ts'
import { getInvoice, lockInvoice, requireInvoice, type InvoiceView } from '../invoicing/invoices/read.ts'
import { trackPayment } from '../invoicing/payments/service.ts'
import { guards } from '../records/guards.ts'
import { auditOf, systemActor, transaction, uniquely } from '../records/service.ts'
import type { Progress } from '../../infra/scheduler.ts'
import { linkCustomer } from './customer-link.ts'
import { PAYMENT_PROVIDER_TYPES, PROVIDER_TYPES, SECRET_FIELDS, ProviderError, type PaymentProvider, type PaymentProviderType, type ProviderConnection, type ProviderNotification, type ProviderSecrets, type ProviderType, type PushResult } from './provider.ts'
import { stripe } from './stripe.ts'
import * as store from './store.ts'
import { accountingSyncsOf, retryAccounting, type AccountingSyncRow } from './accounting-store.ts'

export const FILTERS = store.FILTERS

const PROVIDERS: Record<PaymentProviderType, PaymentProvider> = { stripe }
/** The adapter of a payment provider connection (the invoice_syncs queue holds no other). */
const paymentProvider = (type: ProviderType): PaymentProvider => PROVIDERS[type as PaymentProviderType]

// ---- connections --------------------------------------------------------------------------------------

type SecretData = Partial<Record<ProviderType, Record<string, string>>>

export interface CreateConnectionInput {
  name: string
  provider_type: ProviderType
  encrypted_secret_data: SecretData
  api_base_url?: string | null
  sync_config?: store.SyncConfig
  metadata?: Record<string, string>
}

export interface UpdateConnectionInput {
  name?: string
  encrypted_secret_data?: SecretData
  api_base_url?: string | null
  sync_config?: store.SyncConfig
  metadata?: Record<string, string>
  version?: number
}

/** A connection as the API shows it: never its secrets; where the provider sends its notifications (Stripe's events, QuickBooks' webhooks). */
export type ConnectionView = Omit<store.ConnectionRow, 'encrypted_secret_data'> & { webhook_url: string }

const viewOf = ({ encrypted_secret_data: _secret, ...row }: store.ConnectionRow): ConnectionView => ({
  ...row,
  webhook_url: `/v1/webhooks/${row.provider_type}/${row.tenant_id}/${row.environment_id}`,
})

/** Invoices go out and payments come in unless the sync config turns a direction off. */
const syncConfig = (given: store.SyncConfig = {}, current: store.SyncConfig = {}): store.SyncConfig => {
  const merged: store.SyncConfig = { invoice: { inbound: true, outbound: true }, ...current }
  for (const [entity, flags] of Object.entries(given)) merged[entity] = { ...merged[entity], ...flags }
  return merged
}

function secretsOf(provider: ProviderType, data: SecretData | undefined, current: Record<string, string> = {}): Record<string, string> {
  const { required, optional } = SECRET_FIELDS[provider]
  const given = data?.[provider] ?? {}
  // The credentials route takes every provider's fields: another provider's is refused, not stored.
  for (const field of Object.keys(given)) {
    if (!required.includes(field) && !optional.includes(field)) throw validationError(`encrypted_secret_data.${provider}.${field}`, `is not a ${provider} secret (${[...required, ...optional].join(', ')})`)
  }
  const secrets = { ...current, ...given }
  for (const field of required) {
    if (!secrets[field]) throw validationError(`encrypted_secret_data.${provider}.${field}`, `is required for a ${provider} connection`)
  }
  return secrets
}

const uniqueProvider = (provider: string) => [{ index: store.PROVIDER_INDEX, field: 'provider_type', value: provider }]

export async function createConnection(deps: Deps, actor: Actor, input: CreateConnectionInput): Promise<ConnectionView> {
  const secrets = secretsOf(input.provider_type, input.encrypted_secret_data)
  const id = newId(store.CONNECTIONS.prefix)
  const row = await uniquely('connection', uniqueProvider(input.provider_type), () =>
    insertRecord<store.ConnectionRow>(deps.sql, store.CONNECTIONS, actor, auditOf(deps, actor), {
      id,
      name: input.name,
      provider_type: input.provider_type,
      encrypted_secret_data: seal(deps.config, id, secrets),
      api_base_url: input.api_base_url ?? null,
      sync_config: syncConfig(input.sync_config),
      metadata: input.metadata ?? {},
    }),
  )
  return viewOf(row)
}

const requireConnection = (deps: Deps, scope: Scope, id: string) => requireRecord<store.ConnectionRow>(deps.sql, store.CONNECTIONS, scope, id, { published: true })

export async function getConnection(deps: Deps, actor: Actor, id: string): Promise<ConnectionView> {
  return viewOf(await requireConnection(deps, actor, id))
}

export async function listConnections(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<ConnectionView>> {
  const { rows, total } = await listRecords<store.ConnectionRow>(deps.sql, store.CONNECTIONS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(rows.map(viewOf), total, params)
}

/** Secrets sent are merged over the stored ones (e.g. a rolled webhook_secret alone). */
export async function updateConnection(deps: Deps, actor: Actor, id: string, input: UpdateConnectionInput): Promise<ConnectionView> {
  const { version, encrypted_secret_data, sync_config, ...fields } = input
  return transaction(deps, async (tx) => {
    const current = await requireRecord<store.ConnectionRow>(tx, store.CONNECTIONS, actor, id, { published: true })
    const changes: Record<string, unknown> = { ...fields }
    if (sync_config) changes.sync_config = syncConfig(sync_config, current.sync_config)
    if (encrypted_secret_data) {
      const stored = unseal<Record<string, string>>(deps.config, id, current.encrypted_secret_data)
      changes.encrypted_secret_data = seal(deps.config, id, secretsOf(current.provider_type, encrypted_secret_data, stored))
    }
    return viewOf(await updateRecord<store.ConnectionRow>(tx, store.CONNECTIONS, actor, id, changes, { version, audit: auditOf(deps, actor) }))
  })
}

/** What may still use a connection refuses its deletion by throwing (scheduled exports naming it: plugged in roles.ts). */
export const connectionDeletion = guards()

/** Deleted: nothing more is pushed and its callback address answers 404; pushes already made stay. */
export async function deleteConnection(deps: Deps, actor: Actor, id: string): Promise<ConnectionView> {
  return transaction(deps, async (tx) => {
    await requireRecord<store.ConnectionRow>(tx, store.CONNECTIONS, actor, id, { published: true })
    await connectionDeletion.check(tx, actor, id)
    return viewOf(await deleteRecord<store.ConnectionRow>(tx, store.CONNECTIONS, actor, id, auditOf(deps, actor)))
  })
}

// ---- Flexprice's older "integration secrets" API: the same connections, named by provider ---------------------

/** The environment's live connection to a provider, if any (there is at most one). */
async function connectionFor(deps: Deps, actor: Actor, provider: string): Promise<store.ConnectionRow | undefined> {
  const where = filterConditions(deps.sql, store.FILTERS, { provider_type: provider })
  const { rows } = await listRecords<store.ConnectionRow>(deps.sql, store.CONNECTIONS, actor, { limit: 1, offset: 0, sort: 'created_at', order: 'desc', status: 'published', metadata: {} }, where)
  return rows[0]
}

function knownProvider(provider: string): ProviderType {
  if (!(PROVIDER_TYPES as readonly string[]).includes(provider)) throw validationError('provider', `${provider} is not supported; connections exist for ${PROVIDER_TYPES.join(', ')}`)
  return provider as ProviderType
}

/** POST /v1/secrets/integrations/create/{provider}: makes the provider's connection, or updates the one there is. */
export async function saveProviderCredentials(deps: Deps, actor: Actor, provider: string, input: { name: string; credentials: Record<string, string> }): Promise<ConnectionView> {
  const type = knownProvider(provider)
  const current = await connectionFor(deps, actor, type)
  const secrets = { [type]: input.credentials }
  if (current) return updateConnection(deps, actor, current.id, { name: input.name, encrypted_secret_data: secrets })
  return createConnection(deps, actor, { name: input.name, provider_type: type, encrypted_secret_data: secrets })
}

export async function getProviderConnection(deps: Deps, actor: Actor, provider: string): Promise<ConnectionView> {
  const row = await connectionFor(deps, actor, knownProvider(provider))
  if (!row) throw notFound('connection for provider', provider)
  return viewOf(row)
}

/** The providers this environment has a live connection to. */
export async function linkedProviders(deps: Deps, actor: Actor): Promise<{ providers: string[] }> {
  const { rows } = await listRecords<store.ConnectionRow>(deps.sql, store.CONNECTIONS, actor, { limit: 1000, offset: 0, sort: 'created_at', order: 'asc', status: 'published', metadata: {} })
  return { providers: [...new Set(rows.map((r) => r.provider_type))] }
}

const providerConnection = (deps: Deps, row: store.ConnectionRow): ProviderConnection => ({
  id: row.id,
  provider_type: row.provider_type,
  api_base_url: row.api_base_url,
  secrets: unseal<ProviderSecrets>(deps.config, row.id, row.encrypted_secret_data),
})

// ---- the customer's payment method ----------------------------------------------------------------------

interface PaymentAccount {
  type: PaymentProviderType
  row: store.ConnectionRow
  providerCustomerId: string
}

/** The customer's account at a connected payment provider (its mapping, made when an invoice was first pushed), if any. */
async function paymentAccount(deps: Deps, actor: Actor, customer: { integrations: { provider_type: string; provider_entity_id: string }[] }): Promise<PaymentAccount | undefined> {
  for (const type of PAYMENT_PROVIDER_TYPES) {
    const mapping = customer.integrations.find((m) => m.provider_type === type)
    const row = mapping ? await connectionFor(deps, actor, type) : undefined
    if (mapping && row) return { type, row, providerCustomerId: mapping.provider_entity_id }
  }
  return undefined
}

/** The provider holding the customer's payment methods; null when none is connected or the customer has no account there yet. */
export async function paymentMethodProvider(deps: Deps, actor: Actor, customer: { integrations: { provider_type: string; provider_entity_id: string }[] }): Promise<{ provider: PaymentProviderType | null }> {
  return { provider: (await paymentAccount(deps, actor, customer))?.type ?? null }
}

/** Opens the provider's page where the customer updates its payment method, coming back to `returnUrl`. */
export async function paymentMethodPage(
  deps: Deps,
  actor: Actor,
  customer: { integrations: { provider_type: string; provider_entity_id: string }[] },
  returnUrl: string,
): Promise<{ provider: PaymentProviderType; url: string }> {
  const account = await paymentAccount(deps, actor, customer)
  if (!account) throw new AppError('not_found', "no connected payment provider holds this customer's payment methods", {})
  try {
    const page = await paymentProvider(account.type).paymentMethodPage(providerConnection(deps, account.row), { provider_customer_id: account.providerCustomerId, return_url: returnUrl })
    return { provider: account.type, url: page.url }
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err
    deps.logger.warn({ err, provider: account.type }, 'payment method page not opened')
    throw new AppError('service_unavailable', `${account.type} did not open the payment method page; retry shortly`, {}, { retryAfter: 5 })
  }
}

// ---- pushing invoices ---------------------------------------------------------------------------------

const BATCH = 200

/**
 * What the provider invoice lists: each line as it charges (amount − discounts + its tax share), and
 * one line for what prepaid credits, credit notes and earlier payments took off, so the items add up
 * to what is still owed.
 */
function itemsOf(invoice: InvoiceView) {
  const items = invoice.line_items
    .map((l) => ({ description: l.display_name ?? 'Charge', amount: l.amount.minus(l.line_item_discount).minus(l.invoice_level_discount).plus(l.tax_amount) }))
    .filter((i) => !i.amount.isZero())
  const rest = invoice.amount_remaining.minus(sumMoney(items.map((i) => i.amount)))
  return rest.isZero() ? items : [...items, { description: 'Prepaid credits, adjustments and payments', amount: rest }]
}

type SyncOutcome = 'synced' | 'retrying' | 'failed' | 'skipped'

/**
 * A trial charged automatically asks for no money now but for a card: the provider's hosted setup page
 * (Stripe Checkout in setup mode) becomes the invoice's checkout_url. Its address after the card is saved
 * is the connection's metadata checkout_success_url (checkout_cancel_url when the customer leaves).
 */
async function setupCard(deps: Deps, scope: Scope, connection: store.ConnectionRow, invoice: InvoiceView, row: store.SyncRow, now: Date): Promise<SyncOutcome> {
  const success = connection.metadata.checkout_success_url
  if (!success) throw new ProviderError("the connection's metadata has no checkout_success_url, where the customer goes once the card is saved")
  const mapping = invoice.customer?.integrations.find((m) => m.provider_type === connection.provider_type)
  const result = await paymentProvider(connection.provider_type).setupCard(providerConnection(deps, connection), {
    invoice: { id: invoice.id, currency: invoice.currency },
    customer: { id: invoice.customer_id, name: invoice.customer?.name ?? invoice.customer_id, email: invoice.customer?.email ?? null, provider_customer_id: mapping?.provider_entity_id ?? null },
    success_url: success,
    cancel_url: connection.metadata.checkout_cancel_url ?? null,
  })
  await linkCustomer(deps, scope, invoice.customer!, connection.provider_type, result.provider_customer_id)
  const pushed: PushResult = { provider_invoice_id: result.session_id, provider_customer_id: result.provider_customer_id, collection_method: 'charge_automatically', provider_status: 'setup_open', checkout_url: result.checkout_url, payment_error: null }
  await transaction(deps, async (tx) => {
    await store.markSynced(tx, row, pushed, now)
    await mergeInvoiceMetadata(tx, scope, { by: 'system', at: now }, invoice.id, { payment_provider: connection.provider_type, checkout_url: result.checkout_url, checkout_status: 'open', checkout_session_id: result.session_id })
  })
  return 'synced'
}

/**
 * A push that charged the saved payment method is a card payment: failed (with the provider's reason), or
 * pending until the provider's notification of the paid invoice (same reference) completes it.
 */
async function recordCharge(tx: Tx, scope: Scope, audit: Audit, invoice: InvoiceView, provider: ProviderType, result: PushResult): Promise<void> {
  if (result.collection_method !== 'charge_automatically') return
  const status = result.payment_error ? 'FAILED' : result.provider_status === 'paid' ? 'PENDING' : null
  if (!status) return
  const source = { method: 'CARD' as const, gateway: provider, reference: result.provider_invoice_id, error_message: result.payment_error }
  await trackPayment(tx, scope, audit, invoice, { status, amount: invoice.amount_remaining }, source)
}

async function syncOne(deps: Deps, row: store.SyncRow, now: Date): Promise<SyncOutcome> {
  const scope: Scope = { tenantId: row.tenant_id, environmentId: row.environment_id }
  const connection = await requireRecord<store.ConnectionRow>(deps.sql, store.CONNECTIONS, scope, row.connection_id)
  const invoice = await getInvoice(deps, systemActor(scope), row.invoice_id)
  const awaitingCard = invoice.metadata.checkout_status === 'awaiting_payment_method'
  const skip =
    connection.status !== 'published' ? 'the connection was deleted'
    : invoice.invoice_status !== 'FINALIZED' ? `the invoice is ${invoice.invoice_status}`
    : invoice.amount_remaining.isZero() && !awaitingCard ? 'nothing is left to pay'
    : undefined
  if (skip) {
    await store.markSkipped(deps.sql, row, skip, now)
    return 'skipped'
  }
  try {
    if (awaitingCard) return await setupCard(deps, scope, connection, invoice, row, now)
    const mapping = invoice.customer?.integrations.find((m) => m.provider_type === connection.provider_type)
    const result = await paymentProvider(connection.provider_type).push(providerConnection(deps, connection), {
      invoice: { id: invoice.id, number: invoice.invoice_number, currency: invoice.currency, due_date: invoice.due_date, description: invoice.description },
      items: itemsOf(invoice),
      customer: { id: invoice.customer_id, name: invoice.customer?.name ?? invoice.customer_id, email: invoice.customer?.email ?? null, provider_customer_id: mapping?.provider_entity_id ?? null },
      now,
    })
    await linkCustomer(deps, scope, invoice.customer!, connection.provider_type, result.provider_customer_id)
    const audit: Audit = { by: 'system', at: now }
    await transaction(deps, async (tx) => {
      await store.markSynced(tx, row, result, now)
      await mergeInvoiceMetadata(tx, scope, audit, invoice.id, {
        payment_provider: connection.provider_type,
        payment_provider_invoice_id: result.provider_invoice_id,
        ...(result.checkout_url && { checkout_url: result.checkout_url }),
      })
      await recordCharge(tx, scope, audit, invoice, connection.provider_type, result)
    })
    return 'synced'
  } catch (err) {
    const attempts = row.attempts + 1
    const next = nextSyncAttempt(attempts, now)
    if (!(err instanceof ProviderError)) deps.logger.error({ err, invoice_id: row.invoice_id }, 'invoice push failed')
    await store.markFailed(deps.sql, row, (err as Error).message, now, next)
    return next ? 'retrying' : 'failed'
  }
}

/** The invoice-sync job: queues newly finalized invoices of connected environments, then pushes what is due. */
export async function syncInvoices(deps: Deps, progress: Progress = () => {}): Promise<Record<SyncOutcome | 'queued' | 'attempted', number>> {
  const now = deps.clock.now()
  const queued = await store.enqueueSyncs(deps.sql, now)
  const due = await store.dueSyncs(deps.sql, now, BATCH)
  const summary = { queued, attempted: due.length, synced: 0, retrying: 0, failed: 0, skipped: 0 }
  for (const [i, row] of due.entries()) {
    summary[await syncOne(deps, row, now)] += 1
    progress(i + 1, due.length)
  }
  return summary
}

/** Where an invoice's pushes stand: to payment providers (items), and its own, its credit notes' and its payments' to accounting systems (accounting). */
type InvoiceSyncs = { items: store.SyncRow[]; accounting: AccountingSyncRow[] }

const syncsView = async (deps: Deps, scope: Scope, invoiceId: string): Promise<InvoiceSyncs> => ({
  items: await store.syncsOf(deps.sql, scope, invoiceId),
  accounting: await accountingSyncsOf(deps.sql, scope, invoiceId),
})

export async function invoiceSyncs(deps: Deps, actor: Actor, invoiceId: string): Promise<InvoiceSyncs> {
  await requireInvoice(deps.sql, actor, invoiceId)
  return syncsView(deps, actor, invoiceId)
}

/** Failed or waiting pushes of an invoice (and of its credit notes and payments) are tried again at the job's next run, with fresh attempts. */
export async function retryInvoiceSync(deps: Deps, actor: Actor, invoiceId: string): Promise<InvoiceSyncs> {
  await requireInvoice(deps.sql, actor, invoiceId)
  const now = deps.clock.now()
  await store.retrySyncs(deps.sql, actor, invoiceId, now)
  await retryAccounting(deps.sql, actor, invoiceId, now)
  return syncsView(deps, actor, invoiceId)
}

/**
 * Dunning's payment retry: the provider charges the invoice it was pushed as again. What happened, as a short
 * outcome (charged, declined, no pushed invoice, or the provider's error); the payment itself is recorded when
 * the provider's notification of it arrives, as for any charge.
 */
export async function retryProviderPayment(deps: Deps, scope: Scope, invoiceId: string, idempotencyKey: string): Promise<string> {
  const pushed = (await store.syncsOf(deps.sql, scope, invoiceId)).find((s) => s.sync_status === 'SYNCED' && s.provider_invoice_id && s.provider_status !== 'setup_open')
  if (!pushed) return 'skipped: the invoice was not pushed to a payment provider'
  const connection = await requireRecord<store.ConnectionRow>(deps.sql, store.CONNECTIONS, scope, pushed.connection_id)
  if (connection.status !== 'published') return 'skipped: the connection was deleted'
  try {
    const result = await paymentProvider(connection.provider_type).retryPayment(providerConnection(deps, connection), pushed.provider_invoice_id!, idempotencyKey)
    return result.payment_error ? `declined: ${result.payment_error}` : `charged: ${connection.provider_type} invoice ${pushed.provider_invoice_id} is ${result.provider_status}`
  } catch (err) {
    if (err instanceof ProviderError) return `failed: ${err.message}`
    throw err
  }
}

// ---- notifications ------------------------------------------------------------------------------------

export interface Notification {
  provider: string
  tenantId: string
  environmentId: string
  rawBody: string | undefined
  headers: Record<string, string | string[] | undefined>
}

type Applied = { outcome: string; invoiceId?: string; reference?: string }

/** Our invoice a payment is for: the one pushed as that provider invoice, else the one its metadata names. */
async function invoiceOf(tx: Tx, scope: Scope, connectionId: string, payment: { invoice_id: string | null; provider_invoice_id: string | null }): Promise<string | undefined> {
  const pushed = payment.provider_invoice_id ? await store.invoiceOfProviderInvoice(tx, connectionId, payment.provider_invoice_id) : undefined
  if (pushed || !payment.invoice_id) return pushed
  try {
    return (await requireInvoice(tx, scope, payment.invoice_id)).id
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') return undefined
    throw err
  }
}

/**
 * Records the payment a notification reports on our invoice, once per provider payment (the invoice
 * lock orders concurrent notifications). A payment the invoice cannot take (voided, other currency) is
 * acknowledged and kept with the reason, since the provider would otherwise resend it for days.
 */
async function applyNotification(deps: Deps, tx: Tx, scope: Scope, connection: store.ConnectionRow, event: ProviderNotification, now: Date): Promise<Applied> {
  if (event.setup && connection.sync_config.invoice?.inbound !== false) return applySetup(deps, tx, scope, connection, event, now)
  const payment = event.payment
  if (!payment || connection.sync_config.invoice?.inbound === false) return { outcome: 'ignored' }
  const invoiceId = await invoiceOf(tx, scope, connection.id, payment)
  if (!invoiceId) return { outcome: 'unmatched' }
  const invoice = await lockInvoice(tx, scope, invoiceId)
  if (await store.paymentRecorded(tx, connection.id, payment.reference)) return { outcome: 'duplicate_payment', invoiceId }
  if (payment.currency !== invoice.currency) return { outcome: `not_applied: paid in ${payment.currency}, invoiced in ${invoice.currency}`, invoiceId }
  try {
    const status = applyPayment(paymentState(invoice), payment.amount, now).payment_status
    const source = { method: 'CARD' as const, gateway: connection.provider_type, reference: payment.reference }
    await recordPayment(deps, tx, scope, { by: `${connection.provider_type}:${event.id}`, at: now }, invoiceId, { payment_status: status, amount: payment.amount.toFixed() }, source)
  } catch (err) {
    if (err instanceof AppError) return { outcome: `not_applied: ${err.message}`, invoiceId }
    throw err
  }
  return { outcome: 'payment_recorded', invoiceId, reference: payment.reference }
}

/**
 * A card setup completed: the trial invoice that asked for it is settled (nothing was owed: no payment
 * record) and a subscription waiting for it becomes active; once per invoice.
 */
async function applySetup(deps: Deps, tx: Tx, scope: Scope, connection: store.ConnectionRow, event: ProviderNotification, now: Date): Promise<Applied> {
  const setup = event.setup!
  const invoiceId = await invoiceOf(tx, scope, connection.id, { invoice_id: setup.invoice_id, provider_invoice_id: null })
  if (!invoiceId) return { outcome: 'unmatched' }
  const invoice = await lockInvoice(tx, scope, invoiceId)
  if (invoice.metadata.checkout_status === 'completed') return { outcome: 'duplicate_setup', invoiceId }
  const audit: Audit = { by: `${connection.provider_type}:${event.id}`, at: now }
  await mergeInvoiceMetadata(tx, scope, audit, invoiceId, { checkout_status: 'completed' })
  await recordPayment(deps, tx, scope, audit, invoiceId, { payment_status: 'SUCCEEDED' }, { method: 'CARD', gateway: connection.provider_type, reference: setup.session_id })
  return { outcome: 'card_saved', invoiceId }
}

/**
 * An inbound notification: the address (provider, tenant, environment) must name a live connection,
 * else 404 without saying which part is wrong; the signature must verify with its webhook secret,
 * else 401 and nothing changes. A notification received before is acknowledged and changes nothing.
 */
export async function receiveNotification(deps: Deps, input: Notification): Promise<{ received: true; duplicate: boolean; outcome?: string; invoice_id?: string }> {
  const adapter = Object.hasOwn(PROVIDERS, input.provider) ? PROVIDERS[input.provider as PaymentProviderType] : undefined
  // Razorpay, Chargebee, HubSpot, Moyasar, Nomod (Flexprice's others): no connection of theirs can exist here.
  if (!adapter) throw new AppError('not_found', `${input.provider} is not connected: notifications are taken from stripe and quickbooks connections only`, { provider: input.provider, supported: [...PROVIDER_TYPES] })
  const scope: Scope = { tenantId: input.tenantId, environmentId: input.environmentId }
  const connection = await store.connectionAt(deps.sql, scope, input.provider)
  if (!connection) throw new AppError('not_found', `no ${input.provider} connection receives notifications at this address`, { provider: input.provider })
  const now = deps.clock.now()
  const rawBody = input.rawBody ?? ''
  const check = adapter.verify(input.headers, rawBody, providerConnection(deps, connection).secrets, Math.floor(now.getTime() / 1000))
  if (!check.ok) throw new AppError('permission_denied', `the notification's signature is ${check.reason}`, { reason: check.reason }, { status: 401 })
  const event = adapter.parse(rawBody)
  if (!event) throw validationError('body', 'is not a provider notification (id, type, data.object)')
  // The saved card becomes the customer's default at the provider before we record it (idempotent on a resend).
  if (event.setup?.setup_intent && event.setup.provider_customer_id) await adapter.saveCard(providerConnection(deps, connection), { setup_intent: event.setup.setup_intent, provider_customer_id: event.setup.provider_customer_id })
  return transaction(deps, async (tx) => {
    const id = await store.receiveEvent(tx, scope, connection.id, event, now)
    if (!id) return { received: true as const, duplicate: true }
    const applied = await applyNotification(deps, tx, scope, connection, event, now)
    await store.settleEvent(tx, id, applied.outcome, applied.invoiceId ?? null, applied.reference ?? null)
    return { received: true as const, duplicate: false, outcome: applied.outcome, invoice_id: applied.invoiceId }
  })
}
