// Customer email (docs/invoicing.md "Email"): finalized invoices and credit notes (PDF attached), payment receipts and
// dunning reminders sent to the customer's email from the environment's sender, every message recorded with its
// attempts. Delivery guarantee: a message is claimed (a 'sending' row with a lease, committed) before the SMTP
// conversation, and settled after it; only the claimant settles it. So each claim sends at most once, two workers
// never send one message twice, and a process that stops between the server's acceptance and the settle leaves the
// message 'unknown' once its lease passes: never resent, since it may have been delivered (its Message-ID, derived
// from the record id, is what to look for at the server). Transient failures (4xx) are new claims, with backoff.
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import { invalidOperation } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import { type ListRequest, type Page, page } from '../../core/list.ts'
import { checkTemplate, renderTemplate } from '../../core/mail-template.ts'
import { formatMoney } from '../../core/money.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import { nextSyncAttempt } from '../../core/sync-retry.ts'
import type { Deps } from '../../infra/deps.ts'
import { filterConditions, listRecords, requireRecord } from '../../infra/records.ts'
import type { Progress } from '../../infra/scheduler.ts'
import { getCreditNote } from '../invoicing/creditnotes/service.ts'
import { creditNotePdf } from '../invoicing/creditnotes/pdf.ts'
import { getInvoice, type InvoiceView } from '../invoicing/invoices/read.ts'
import { invoicePdf } from '../invoicing/invoices/pdf.ts'
import { getPayment } from '../invoicing/payments/service.ts'
import { systemActor } from '../records/service.ts'
import * as store from './store.ts'
import { DEFAULT_TEMPLATES, PLACEHOLDERS } from './templates.ts'
import { compose, deliver, transportOf } from './transport.ts'

export const FILTERS = store.FILTERS
export { KINDS } from './store.ts'

/** Who claims: this process, told apart from another on the same host. */
const WORKER = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
/** Longer than an SMTP conversation can last (connect, greeting and socket timeouts of transport.ts). */
const CLAIM_LEASE_MS = 2 * 60_000
/** The automatic sends look this far back, so a new deployment does not mail its whole history. */
const LOOKBACK_MS = 7 * 86_400_000
const BATCH = 100
const DEFAULT_SENDER = 'billing@localhost'

// ---- settings -----------------------------------------------------------------------------------------

export interface SettingsView {
  from_email: string
  from_name: string | null
  reply_to: string | null
  auto_send: Record<store.Kind, boolean>
  /** The environment's overrides; what is not overridden is the built-in template (default_templates). */
  templates: Partial<Record<store.Kind, store.Template>>
  default_templates: typeof DEFAULT_TEMPLATES
  placeholders: typeof PLACEHOLDERS
  updated_at: Date | null
}

export interface SettingsInput {
  from_email?: string
  from_name?: string | null
  reply_to?: string | null
  auto_send?: Partial<Record<store.Kind, boolean>>
  /** Per kind, the parts to override; a part set to null goes back to the built-in one. */
  templates?: Partial<Record<store.Kind, { subject?: string | null; text?: string | null; html?: string | null }>>
}

async function settingsOf(deps: Deps, scope: Scope): Promise<Omit<SettingsView, 'default_templates' | 'placeholders'>> {
  const row = await store.settingsOf(deps.sql, scope)
  return {
    from_email: row?.from_email ?? DEFAULT_SENDER,
    from_name: row?.from_name ?? null,
    reply_to: row?.reply_to ?? null,
    auto_send: { invoice: true, credit_note: true, payment_receipt: true, dunning_reminder: true, ...row?.auto_send },
    templates: row?.templates ?? {},
    updated_at: row?.updated_at ?? null,
  }
}

export async function getSettings(deps: Deps, actor: Actor): Promise<SettingsView> {
  return { ...(await settingsOf(deps, actor)), default_templates: DEFAULT_TEMPLATES, placeholders: PLACEHOLDERS }
}

export async function updateSettings(deps: Deps, actor: Actor, input: SettingsInput): Promise<SettingsView> {
  const current = await settingsOf(deps, actor)
  const templates = { ...current.templates }
  for (const [kind, parts] of Object.entries(input.templates ?? {}) as [store.Kind, NonNullable<SettingsInput['templates']>[store.Kind]][]) {
    const merged: store.Template = { ...templates[kind] }
    for (const part of ['subject', 'text', 'html'] as const) {
      const value = parts?.[part]
      if (value === null) delete merged[part]
      else if (value !== undefined) {
        checkTemplate(`templates.${kind}.${part}`, value, PLACEHOLDERS[kind])
        merged[part] = value
      }
    }
    templates[kind] = merged
  }
  const auto_send = { ...current.auto_send, ...input.auto_send }
  await store.saveSettings(
    deps.sql,
    actor,
    {
      from_email: input.from_email ?? current.from_email,
      from_name: input.from_name === undefined ? current.from_name : input.from_name,
      reply_to: input.reply_to === undefined ? current.reply_to : input.reply_to,
      auto_send,
      templates,
    },
    deps.clock.now(),
    actor.keyId,
  )
  return getSettings(deps, actor)
}

// ---- the records --------------------------------------------------------------------------------------

export type CommunicationView = Omit<store.MessageRow, 'claimed_by' | 'lease_until'> & { attempts_log: Omit<store.AttemptRow, 'communication_id'>[] }

async function views(deps: Deps, scope: Scope, rows: store.MessageRow[]): Promise<CommunicationView[]> {
  const attempts = await store.attemptsOf(deps.sql, scope, rows.map((r) => r.id))
  return rows.map(({ claimed_by: _c, lease_until: _l, ...row }) => ({
    ...row,
    attempts_log: attempts.filter((a) => a.communication_id === row.id).map(({ communication_id: _id, ...a }) => a),
  }))
}

export async function getCommunication(deps: Deps, actor: Actor, id: string): Promise<CommunicationView> {
  const row = await requireRecord<store.MessageRow>(deps.sql, store.MESSAGES, actor, id)
  return (await views(deps, actor, [row]))[0]
}

export async function listCommunications(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<CommunicationView>> {
  const { rows, total } = await listRecords<store.MessageRow>(deps.sql, store.MESSAGES, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await views(deps, actor, rows), total, params)
}

// ---- composing ----------------------------------------------------------------------------------------

const day = (d: Date | null | undefined): string => (d ? d.toISOString().slice(0, 10) : '')

function invoiceVariables(invoice: InvoiceView, senderName: string): Record<string, string> {
  const money = (d: InvoiceView['total']) => formatMoney(d, invoice.currency)
  return {
    customer_name: invoice.customer?.name ?? '',
    customer_email: invoice.customer?.email ?? '',
    sender_name: senderName,
    invoice_number: invoice.invoice_number ?? invoice.id,
    invoice_id: invoice.id,
    currency: invoice.currency,
    total: money(invoice.total),
    amount_due: money(invoice.amount_due),
    amount_remaining: money(invoice.amount_remaining),
    due_date: day(invoice.due_date),
    period_start: day(invoice.period_start),
    period_end: day(invoice.period_end),
    pay_url: invoice.metadata.checkout_url ?? '',
  }
}

interface Source {
  kind: store.Kind
  source_key: string
  invoice: InvoiceView
  credit_note_id?: string
  payment_id?: string
  variables: Record<string, string>
}

async function sourceOf(deps: Deps, scope: Scope, kind: store.Candidate['kind'], id: string): Promise<Source> {
  const actor = systemActor(scope)
  if (kind === 'invoice') return { kind, source_key: `invoice:${id}`, invoice: await getInvoice(deps, actor, id), variables: {} }
  if (kind === 'credit_note') {
    const note = await getCreditNote(deps, actor, id)
    return {
      kind,
      source_key: `credit_note:${id}`,
      invoice: await getInvoice(deps, actor, note.invoice_id),
      credit_note_id: id,
      variables: { credit_note_number: note.credit_note_number ?? id, credit_amount: formatMoney(note.total_amount, note.currency), reason: note.reason },
    }
  }
  const payment = await getPayment(deps, actor, id)
  return {
    kind,
    source_key: `payment:${id}`,
    invoice: await getInvoice(deps, actor, payment.destination_id),
    payment_id: id,
    variables: { payment_amount: formatMoney(payment.amount, payment.currency), payment_date: day(payment.succeeded_at), payment_method: payment.payment_method_type },
  }
}

/** Records a message for `source` (once per source key): pending, or skipped when the customer has no email. */
async function queue(deps: Deps, scope: Scope, source: Source, by: string): Promise<store.MessageRow | undefined> {
  const settings = await settingsOf(deps, scope)
  const variables = { ...invoiceVariables(source.invoice, settings.from_name ?? settings.from_email), ...source.variables }
  const template = { ...DEFAULT_TEMPLATES[source.kind], ...settings.templates[source.kind] }
  const id = newId(store.MESSAGES.prefix)
  const to = source.invoice.customer?.email ?? null
  return store.insertMessage(
    deps.sql,
    scope,
    {
      id,
      kind: source.kind,
      source_key: source.source_key,
      customer_id: source.invoice.customer_id,
      invoice_id: source.invoice.id,
      credit_note_id: source.credit_note_id ?? null,
      payment_id: source.payment_id ?? null,
      to_email: to,
      from_email: settings.from_email,
      subject: renderTemplate(template.subject, variables, false),
      message_id: `<${id}@${settings.from_email.split('@')[1] || 'localhost'}>`,
      delivery_status: to ? 'pending' : 'skipped',
      last_error: to ? null : 'the customer has no email',
      variables,
    },
    deps.clock.now(),
    by,
  )
}

/** The raw message of a claimed record: its templates as the environment has them now, the PDF attached to invoice and credit note email. */
async function rawOf(deps: Deps, row: store.MessageRow): Promise<Buffer> {
  const scope: Scope = { tenantId: row.tenant_id, environmentId: row.environment_id }
  const settings = await settingsOf(deps, scope)
  const template = { ...DEFAULT_TEMPLATES[row.kind], ...settings.templates[row.kind] }
  const attachments = []
  if (row.kind === 'invoice' && row.invoice_id) {
    const { invoice, pdf } = await invoicePdf(deps, systemActor(scope), row.invoice_id)
    attachments.push({ filename: `${invoice.invoice_number ?? invoice.id}.pdf`, content: pdf, contentType: 'application/pdf' })
  }
  if (row.kind === 'credit_note' && row.credit_note_id) {
    const { note, pdf } = await creditNotePdf(deps, systemActor(scope), row.credit_note_id)
    attachments.push({ filename: `${note.credit_note_number ?? note.id}.pdf`, content: pdf, contentType: 'application/pdf' })
  }
  return compose({
    from: { name: settings.from_name ?? '', address: row.from_email },
    replyTo: settings.reply_to,
    to: row.to_email!,
    subject: row.subject,
    text: renderTemplate(template.text, row.variables, false),
    html: renderTemplate(template.html, row.variables, true),
    messageId: row.message_id,
    date: deps.clock.now(),
    attachments,
  })
}

// ---- sending ------------------------------------------------------------------------------------------

/** One claim, one send, one settle (see the guarantee at the top). Undefined when another process holds it. */
async function sendOne(deps: Deps, id: string): Promise<store.MessageRow['delivery_status'] | undefined> {
  const now = deps.clock.now()
  const claimed = await store.claim(deps.sql, id, WORKER, transportOf(deps.config), now, new Date(now.getTime() + CLAIM_LEASE_MS))
  if (!claimed) return undefined
  let delivery: Awaited<ReturnType<typeof deliver>>
  try {
    delivery = await deliver(deps.config, await rawOf(deps, claimed), { from: claimed.from_email, to: claimed.to_email! }, claimed.id)
  } catch (err) {
    // Nothing left the process (the PDF or the file could not be made): tried again like a 4xx.
    deps.logger.error({ err, communication_id: id }, 'composing or writing a message failed')
    delivery = { outcome: 'transient', code: null, response: (err as Error).message }
  }
  const next = delivery.outcome === 'transient' ? nextSyncAttempt(claimed.attempts, now) : null
  const status = delivery.outcome === 'sent' ? 'sent' : next ? 'retrying' : 'failed'
  const outcome = { delivery_status: status, next_attempt_at: next ?? undefined, file_path: delivery.file_path, attempt: { outcome: delivery.outcome, response_code: delivery.code, response: delivery.response } } as const
  await store.settle(deps.sql, claimed, WORKER, outcome, deps.clock.now())
  return status
}

type RunSummary = { queued: number; attempted: number; expired_claims: number; unknown: number } & Partial<Record<store.DeliveryStatus, number>>

/**
 * The communications job: claims left by stopped processes settled, new finalized invoices, credit notes and
 * succeeded payments of the last week given their message, then every due message sent.
 */
export async function deliverCommunications(deps: Deps, progress: Progress = () => {}): Promise<RunSummary> {
  const now = deps.clock.now()
  const expired = await store.expireClaims(deps.sql, now)
  let queued = 0
  for (const c of await store.unsentRecords(deps.sql, new Date(now.getTime() - LOOKBACK_MS), BATCH)) {
    const scope: Scope = { tenantId: c.tenant_id, environmentId: c.environment_id }
    try {
      if (await queue(deps, scope, await sourceOf(deps, scope, c.kind, c.id), 'system')) queued += 1
    } catch (err) {
      // One record that cannot be read must not hold up everyone else's mail; it is tried again next run.
      deps.logger.error({ err, kind: c.kind, id: c.id }, 'a message could not be queued')
    }
  }
  const due = await store.dueMessages(deps.sql, now, BATCH)
  const summary: RunSummary = { queued, attempted: due.length, expired_claims: expired.retried, unknown: expired.unknown }
  for (const [i, row] of due.entries()) {
    const status = await sendOne(deps, row.id)
    if (status) summary[status] = (summary[status] ?? 0) + 1
    progress(i + 1, due.length)
  }
  return summary
}

/** POST /v1/invoices/{id}/comms/trigger: the invoice email now; a new message when one was sent before. */
export async function sendInvoiceNow(deps: Deps, actor: Actor, invoiceId: string): Promise<CommunicationView> {
  const source = await sourceOf(deps, actor, 'invoice', invoiceId)
  if (source.invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`invoice ${invoiceId} is ${source.invoice.invoice_status}: only finalized invoices are sent`, { invoice_status: source.invoice.invoice_status })
  // The first send takes the automatic message's key, so the job does not send it again; later ones are their own.
  const row = (await queue(deps, actor, source, actor.keyId)) ?? (await queue(deps, actor, { ...source, source_key: `invoice:${invoiceId}:manual:${newId('m')}` }, actor.keyId))
  if (row!.delivery_status === 'pending') await sendOne(deps, row!.id)
  return getCommunication(deps, actor, row!.id)
}

/**
 * A dunning reminder for step `step` of an invoice (domains/dunning), queued once per step and sent now; its status,
 * or undefined when the environment turned reminders off.
 */
export async function sendDunningReminder(deps: Deps, scope: Scope, invoiceId: string, step: number, daysOverdue: number): Promise<store.DeliveryStatus | undefined> {
  const settings = await settingsOf(deps, scope)
  if (!settings.auto_send.dunning_reminder) return undefined
  const invoice = await getInvoice(deps, systemActor(scope), invoiceId)
  const source: Source = { kind: 'dunning_reminder', source_key: `dunning:${invoiceId}:${step}`, invoice, variables: { days_overdue: String(daysOverdue), step: String(step + 1) } }
  const row = await queue(deps, scope, source, 'dunning')
  if (!row) return undefined
  if (row.delivery_status !== 'pending') return row.delivery_status
  return (await sendOne(deps, row.id)) ?? 'sending'
}
