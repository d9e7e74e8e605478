// Accounting sync (rule 16, accounting systems): the invoice-sync job pushes finalized invoices, then
// their finalized credit notes and succeeded payments, to each live QuickBooks connection. Each record is
// pushed once: its create carries a requestid derived from it, so a push QuickBooks accepted but we did
// not record (a crash, a lost answer) is answered with the first record when retried. Failures are
// retried with the same backoff as payment provider pushes and shown on the invoice's sync view.
import { nextSyncAttempt } from '../../core/sync-retry.ts'
import { DISPLAY_NAME_MAX, ITEM_NAME_MAX, creditMemoBody, invoiceBody, invoiceCharges, paymentBody, qboJson, qboName, qboQuery, type Charge } from '../../core/quickbooks.ts'
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { requireRecord } from '../../infra/records.ts'
import { seal, unseal } from '../../infra/secrets.ts'
import { getCustomer, type CustomerView } from '../customers/service.ts'
import { getCreditNote } from '../invoicing/creditnotes/service.ts'
import { getInvoice } from '../invoicing/invoices/read.ts'
import { getPayment } from '../invoicing/payments/service.ts'
import { systemActor } from '../records/service.ts'
import * as store from './accounting-store.ts'
import { linkCustomer } from './customer-link.ts'
import { ProviderError } from './provider.ts'
import * as qbo from './quickbooks.ts'
import { CONNECTIONS, saveSecrets, type ConnectionRow } from './store.ts'

/** A credit note or payment whose invoice is not at QuickBooks yet looks again a minute later. */
const WAIT_MS = 60_000
const BATCH = 200

type Outcome = 'synced' | 'retrying' | 'failed' | 'skipped' | 'waiting'

/** One QuickBooks session per connection and run, the income account new items are booked to, and the items met (by name), so a run asks for each once. */
interface Company {
  session: qbo.QuickbooksSession
  incomeAccount(): Promise<string>
  items: Map<string, Promise<string>>
}

/** Opens the session; the rotated refresh token is stored (sealed) before anything is pushed with it. */
export async function open(deps: Deps, connection: ConnectionRow): Promise<Company> {
  const secrets = unseal<qbo.QuickbooksSecrets>(deps.config, connection.id, connection.encrypted_secret_data)
  const { session, refreshToken } = await qbo.openSession({ id: connection.id, api_base_url: connection.api_base_url, secrets })
  if (refreshToken !== secrets.refresh_token) await saveSecrets(deps.sql, connection.id, seal(deps.config, connection.id, { ...secrets, refresh_token: refreshToken }))
  let account: Promise<string> | undefined
  const incomeAccount = async () => {
    const found = connection.metadata.income_account_id ?? (await qbo.findOne(session, 'Account', qboQuery('Account', 'AccountType', 'Income')))
    if (!found) throw new ProviderError("quickbooks has no Income account for new items; set the connection's metadata.income_account_id")
    return found
  }
  return { session, incomeAccount: () => (account ??= incomeAccount()), items: new Map() }
}

/** The customer's QuickBooks Customer: the mapped one, else one of the same display name, else made. */
async function customerRef(deps: Deps, scope: Scope, company: Company, customer: CustomerView): Promise<string> {
  const mapped = customer.integrations.find((m) => m.provider_type === 'quickbooks')
  if (mapped) return mapped.provider_entity_id
  const name = qboName(customer.name, DISPLAY_NAME_MAX, customer.id)
  const body = { DisplayName: name, PrimaryEmailAddr: customer.email ? { Address: customer.email } : undefined, Notes: `meterbill ${customer.id}` }
  const id = await qbo.findOrCreate(company.session, 'Customer', 'DisplayName', name, `customer:${customer.id}`, async () => qboJson(body))
  await linkCustomer(deps, scope, customer, 'quickbooks', id)
  return id
}

/** Each charge's Item, found by name or made as a Service booked to the income account. */
async function itemRefs(company: Company, charges: Charge[]): Promise<Map<string, string>> {
  const items = new Map<string, string>()
  for (const name of new Set(charges.map((c) => c.name))) {
    const body = async () => qboJson({ Name: name, Type: 'Service', IncomeAccountRef: { value: await company.incomeAccount() } })
    if (!company.items.has(name)) company.items.set(name, qbo.findOrCreate(company.session, 'Item', 'Name', name, `item:${name}`, body))
    items.set(name, await company.items.get(name)!)
  }
  return items
}

type Pushed = { external_id: string } | { skip: string } | { wait: string }

async function pushInvoice(deps: Deps, scope: Scope, company: Company, row: store.AccountingSyncRow): Promise<Pushed> {
  const invoice = await getInvoice(deps, systemActor(scope), row.entity_id)
  if (invoice.invoice_status !== 'FINALIZED') return { skip: `the invoice is ${invoice.invoice_status}` }
  const customer = await customerRef(deps, scope, company, invoice.customer!)
  const charges = invoiceCharges(invoice)
  const items = await itemRefs(company, charges.lines)
  const header = { id: invoice.id, number: invoice.invoice_number, currency: invoice.currency, customer_ref: customer, date: invoice.finalized_at!, due_date: invoice.due_date }
  return { external_id: await qbo.create(company.session, 'Invoice', `invoice:${invoice.id}`, invoiceBody(header, charges, items)) }
}

/** The QuickBooks id of the record's invoice, or why the record cannot be pushed (yet). */
async function invoiceRef(deps: Deps, row: store.AccountingSyncRow): Promise<{ id: string } | Exclude<Pushed, { external_id: string }>> {
  const parent = await store.invoiceSyncOf(deps.sql, row)
  if (parent?.external_id) return { id: parent.external_id }
  if (parent?.sync_status === 'SKIPPED') return { skip: `its invoice was not pushed: ${parent.last_error}` }
  return { wait: "waiting for its invoice's push" }
}

async function pushCreditNote(deps: Deps, scope: Scope, company: Company, row: store.AccountingSyncRow): Promise<Pushed> {
  const note = await getCreditNote(deps, systemActor(scope), row.entity_id)
  if (note.credit_note_status !== 'FINALIZED') return { skip: `the credit note is ${note.credit_note_status}` }
  const parent = await invoiceRef(deps, row)
  if (!('id' in parent)) return parent
  const customer = await customerRef(deps, scope, company, note.customer!)
  const lines = note.line_items.map((l) => ({ name: qboName(l.display_name, ITEM_NAME_MAX, 'Charge'), amount: l.amount }))
  const items = await itemRefs(company, lines)
  const header = { id: note.id, number: note.credit_note_number, currency: note.currency, customer_ref: customer, date: note.finalized_at! }
  return { external_id: await qbo.create(company.session, 'CreditMemo', `credit_note:${note.id}`, creditMemoBody(header, lines, items)) }
}

async function pushPayment(deps: Deps, scope: Scope, company: Company, row: store.AccountingSyncRow): Promise<Pushed> {
  const payment = await getPayment(deps, systemActor(scope), row.entity_id)
  const parent = await invoiceRef(deps, row)
  if (!('id' in parent)) return parent
  const customer = await customerRef(deps, scope, company, await getCustomer(deps, systemActor(scope), payment.customer_id))
  const header = { id: payment.id, number: payment.invoice_number, currency: payment.currency, customer_ref: customer, date: payment.succeeded_at ?? payment.created_at, reference: payment.gateway_payment_id }
  return { external_id: await qbo.create(company.session, 'Payment', `payment:${payment.id}`, paymentBody(header, payment.amount, parent.id)) }
}

const PUSH = { invoice: pushInvoice, credit_note: pushCreditNote, payment: pushPayment }

/** What a run reads once per connection: the connection, and its opened session (on first push). */
interface RunConnection {
  connection: Promise<ConnectionRow>
  company?: Promise<Company>
}

async function syncOne(deps: Deps, run: Map<string, RunConnection>, row: store.AccountingSyncRow, now: Date): Promise<Outcome> {
  const scope: Scope = { tenantId: row.tenant_id, environmentId: row.environment_id }
  let mine = run.get(row.connection_id)
  if (!mine) run.set(row.connection_id, (mine = { connection: requireRecord<ConnectionRow>(deps.sql, CONNECTIONS, scope, row.connection_id) }))
  const connection = await mine.connection
  if (connection.status !== 'published') {
    await store.markSkipped(deps.sql, row, 'the connection was deleted', now)
    return 'skipped'
  }
  try {
    const pushed = await PUSH[row.entity_type](deps, scope, await (mine.company ??= open(deps, connection)), row)
    if ('skip' in pushed) {
      await store.markSkipped(deps.sql, row, pushed.skip, now)
      return 'skipped'
    }
    if ('wait' in pushed) {
      await store.markWaiting(deps.sql, row, pushed.wait, now, new Date(now.getTime() + WAIT_MS))
      return 'waiting'
    }
    await store.markSynced(deps.sql, row, pushed.external_id, now)
    return 'synced'
  } catch (err) {
    const attempts = row.attempts + 1
    const next = nextSyncAttempt(attempts, now)
    if (!(err instanceof ProviderError)) deps.logger.error({ err, entity_id: row.entity_id }, 'accounting push failed')
    await store.markFailed(deps.sql, row, (err as Error).message, now, next)
    return next ? 'retrying' : 'failed'
  }
}

/** Queues new records of connected environments, then pushes what is due, invoices first. */
export async function syncAccounting(deps: Deps): Promise<Record<Outcome | 'queued' | 'attempted', number>> {
  const now = deps.clock.now()
  const queued = await store.enqueueAccounting(deps.sql, now)
  const due = await store.dueAccounting(deps.sql, now, BATCH)
  const summary = { queued, attempted: due.length, synced: 0, retrying: 0, failed: 0, skipped: 0, waiting: 0 }
  const run = new Map<string, RunConnection>()
  for (const row of due) summary[await syncOne(deps, run, row, now)] += 1
  return summary
}
