// Invoice email against a real SMTP server started here (test/smtp-sink.ts): the message and its headers, its PDF,
// a retry after a 4xx reply, one message when two workers run at once, and none twice when the sender is killed
// between the server's acceptance and the record of it.
import type { ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { customer } from '../../test/catalog.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { attachments, header, plainText, startSmtpSink, type SmtpSink } from '../../test/smtp-sink.ts'
import { call, runNamedJob } from '../../test/wallets.ts'
import { runWorkerChild } from '../../test/worker-child.ts'
import { deliverCommunications } from './service.ts'

const clock = fixedClock(new Date())
let h: Harness
let smtp: SmtpSink
let child: ChildProcess | undefined

beforeAll(async () => {
  smtp = await startSmtpSink()
  h = await startHarness({ clock, env: { SMTP_URL: smtp.url } })
})
afterAll(async () => {
  child?.kill('SIGKILL')
  await smtp?.stop()
  await h?.stop().catch(() => rmSync(h.config.dataDir, { recursive: true, force: true }))
})

async function finalizedInvoice(customerId: string, amount = '120.00'): Promise<any> {
  const draft = await call(h, 'POST', '/v1/invoices', { customer_id: customerId, currency: 'USD', subtotal: amount, total: amount, amount_due: amount, line_items: [{ display_name: 'Support plan', amount, quantity: '1' }] }, 201)
  await call(h, 'POST', `/v1/invoices/${draft.id}/finalize`)
  return call(h, 'GET', `/v1/invoices/${draft.id}`)
}

/** The PDF's text as a reader sees it (pdf.js). */
async function pdfText(bytes: Buffer): Promise<string> {
  const doc = await getDocument({ data: new Uint8Array(bytes), verbosity: 0 }).promise
  let text = ''
  for (let n = 1; n <= doc.numPages; n++) for (const item of (await (await doc.getPage(n)).getTextContent()).items) if ('str' in item) text += item.str + ' '
  return text
}

const messagesOf = async (invoiceId: string): Promise<any[]> => (await call(h, 'GET', `/v1/communications?invoice_id=${invoiceId}&kind=invoice`)).items
const received = (messageId: string) => smtp.messages.filter((m) => header(m.raw, 'Message-ID') === messageId)

describe('invoice email over SMTP', () => {
  let cust: any
  it('sends a finalized invoice to the customer with its PDF, from the environment sender, with overridable escaped templates', async () => {
    cust = await customer(h, { name: 'Ada <b>Lovelace</b>', email: 'ada@example.org' })
    await call(h, 'PUT', '/v1/communications/settings', { from_email: 'billing@acme.test', from_name: 'Acme Billing', reply_to: 'help@acme.test', templates: { invoice: { html: '<p>Hello {{customer_name}}, {{amount_due}} {{currency}}</p>' } } })
    const bad = await h.http('PUT', '/v1/communications/settings', { body: { templates: { invoice: { subject: 'Hi {{api_key}}' } } } })
    expect(bad.status).toBe(400)
    expect(bad.body.details).toHaveProperty(['templates.invoice.subject'])

    const invoice = await finalizedInvoice(cust.id)
    const run = await runNamedJob(h, 'communications')
    expect(run).toMatchObject({ queued: 1, sent: 1 })
    const [message] = await messagesOf(invoice.id)
    expect(message).toMatchObject({ delivery_status: 'sent', to_email: 'ada@example.org', from_email: 'billing@acme.test', customer_id: cust.id, attempts: 1 })
    expect(message.attempts_log).toEqual([expect.objectContaining({ outcome: 'sent', response_code: 250, transport: 'smtp' })])
    expect(message.message_id).toBe(`<${message.id}@acme.test>`)

    const [mail] = received(message.message_id)
    expect(mail.to).toEqual(['ada@example.org'])
    expect(mail.from).toBe('billing@acme.test')
    expect(header(mail.raw, 'From')).toBe('Acme Billing <billing@acme.test>')
    expect(header(mail.raw, 'Reply-To')).toBe('help@acme.test')
    expect(header(mail.raw, 'Subject')).toBe(`Invoice ${invoice.invoice_number} from Acme Billing`)
    expect(plainText(mail.raw)).toContain(`Your invoice ${invoice.invoice_number} for 120.00 USD is attached`)
    expect(mail.raw).toContain('Hello Ada &lt;b&gt;Lovelace&lt;/b&gt;, 120.00 USD')
    const [pdf] = attachments(mail.raw)
    expect(pdf).toMatchObject({ filename: `${invoice.invoice_number}.pdf`, contentType: 'application/pdf' })
    expect(pdf.content.subarray(0, 5).toString()).toBe('%PDF-')
    const served = await fetch(`${h.baseUrl}/v1/invoices/${invoice.id}/pdf`, { headers: { 'x-api-key': h.key } })
    expect(pdf.content.length).toBeGreaterThan(1000)
    expect(Math.abs(pdf.content.length - (await served.arrayBuffer()).byteLength)).toBeLessThan(200)

    // Run again: nothing more for the same invoice.
    expect(await runNamedJob(h, 'communications')).toMatchObject({ queued: 0, attempted: 0 })
    expect(received(message.message_id)).toHaveLength(1)
  })

  it('sends a finalized credit note with its PDF, and a receipt for a payment', async () => {
    const invoice = await finalizedInvoice(cust.id, '80.00')
    await call(h, 'PUT', `/v1/invoices/${invoice.id}/payment`, { payment_status: 'SUCCEEDED', amount: '80.00' })
    const note = await call(h, 'POST', '/v1/creditnotes', { invoice_id: invoice.id, reason: 'SERVICE_ISSUE', line_items: [{ invoice_line_item_id: invoice.line_items[0].id, amount: '12.50' }] }, 201)
    await call(h, 'POST', `/v1/creditnotes/${note.id}/finalize`)
    const numbered = await call(h, 'GET', `/v1/creditnotes/${note.id}`)
    expect(await runNamedJob(h, 'communications')).toMatchObject({ queued: 3, sent: 3 })
    const byKind = async (kind: string) => (await call(h, 'GET', `/v1/communications?invoice_id=${invoice.id}&kind=${kind}`)).items
    const [credit] = await byKind('credit_note')
    expect(credit).toMatchObject({ credit_note_id: note.id, delivery_status: 'sent', subject: `Credit note ${numbered.credit_note_number} for invoice ${invoice.invoice_number}` })
    const [mail] = received(credit.message_id)
    expect(plainText(mail.raw)).toContain(`We issued credit note ${numbered.credit_note_number} of 12.50 USD`)
    const [pdf] = attachments(mail.raw)
    expect(pdf.filename).toBe(`${numbered.credit_note_number}.pdf`)
    const text = await pdfText(pdf.content)
    expect(text).toContain('CREDIT NOTE')
    expect(text).toContain('12.50 USD')
    const [receipt] = await byKind('payment_receipt')
    expect(plainText(received(receipt.message_id)[0].raw)).toContain(`We received 80.00 USD on ${invoice.finalized_at.slice(0, 10)} for invoice ${invoice.invoice_number}`)
  })

  it('retries a 4xx reply after its backoff, keeping the attempt, and sends once', async () => {
    const invoice = await finalizedInvoice(cust.id, '30.00')
    smtp.failNext = 1
    expect(await runNamedJob(h, 'communications')).toMatchObject({ retrying: 1 })
    let [message] = await messagesOf(invoice.id)
    expect(message).toMatchObject({ delivery_status: 'retrying', attempts: 1 })
    expect(message.attempts_log).toEqual([expect.objectContaining({ outcome: 'transient', response_code: 451 })])
    expect(await runNamedJob(h, 'communications')).toMatchObject({ attempted: 0 })
    clock.advance(61_000)
    expect(await runNamedJob(h, 'communications')).toMatchObject({ sent: 1 })
    ;[message] = await messagesOf(invoice.id)
    expect(message).toMatchObject({ delivery_status: 'sent', attempts: 2 })
    expect(message.attempts_log.map((a: any) => a.outcome)).toEqual(['transient', 'sent'])
    expect(received(message.message_id)).toHaveLength(1)
  })

  it('sends once when two workers run at the same moment', async () => {
    const invoice = await finalizedInvoice(cust.id, '45.00')
    const runs = await Promise.allSettled([deliverCommunications(h.running.deps), deliverCommunications(h.running.deps)])
    expect(runs.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled'])
    const messages = await messagesOf(invoice.id)
    expect(messages).toHaveLength(1)
    expect(received(messages[0].message_id)).toHaveLength(1)
  })

  it('sends now on POST /v1/invoices/{id}/comms/trigger, still announcing its webhook, and refuses a draft', async () => {
    const invoice = await finalizedInvoice(cust.id, '10.00')
    const answer = await call(h, 'POST', `/v1/invoices/${invoice.id}/comms/trigger`)
    expect(answer.message).toContain('invoice.communication.triggered')
    expect(answer.communication).toMatchObject({ kind: 'invoice', delivery_status: 'sent', invoice_id: invoice.id })
    const again = await call(h, 'POST', `/v1/invoices/${invoice.id}/comms/trigger`)
    expect(again.communication.id).not.toBe(answer.communication.id)
    expect(await runNamedJob(h, 'communications')).toMatchObject({ queued: 0 })
    expect(await messagesOf(invoice.id)).toHaveLength(2)
    const [event] = await h.running.deps.sql`SELECT count(*)::int AS n FROM webhook_events WHERE event_type = 'invoice.communication.triggered' AND entity_id = ${invoice.id}`
    expect(event.n).toBe(2)

    const draft = await call(h, 'POST', '/v1/invoices', { customer_id: cust.id, currency: 'USD', subtotal: '1', total: '1', amount_due: '1' }, 201)
    const refused = await h.http('POST', `/v1/invoices/${draft.id}/comms/trigger`)
    expect(refused.status).toBe(400)
    expect((await call(h, 'GET', `/v1/communications?invoice_id=${draft.id}`)).items).toHaveLength(0)
  })

  it('records a customer without email as skipped, and lists by customer and status', async () => {
    const quiet = await customer(h, { name: 'No Mail Ltd' })
    const invoice = await finalizedInvoice(quiet.id, '5.00')
    await runNamedJob(h, 'communications')
    const page = await call(h, 'GET', `/v1/communications?customer_id=${quiet.id}&delivery_status=skipped`)
    expect(page.items).toEqual([expect.objectContaining({ invoice_id: invoice.id, delivery_status: 'skipped', last_error: 'the customer has no email' })])
    expect((await call(h, 'GET', `/v1/communications?customer_id=${quiet.id}&delivery_status=sent`)).items).toHaveLength(0)
  })

  it('writes .eml files under DATA_DIR/mail/ with no SMTP_URL (the embedded default), listed like sent mail', async () => {
    const invoice = await finalizedInvoice(cust.id, '7.00')
    const embedded = { ...h.running.deps, config: { ...h.running.deps.config, smtpUrl: undefined } }
    expect(await deliverCommunications(embedded)).toMatchObject({ sent: 1 })
    const [message] = await messagesOf(invoice.id)
    expect(message).toMatchObject({ delivery_status: 'sent', transport: 'file', file_path: join(h.config.dataDir, 'mail', `${message.id}.eml`) })
    expect(readdirSync(join(h.config.dataDir, 'mail'))).toEqual([`${message.id}.eml`])
    const raw = readFileSync(message.file_path, 'utf8')
    expect(header(raw, 'Message-ID')).toBe(message.message_id)
    expect(attachments(raw)[0].content.subarray(0, 5).toString()).toBe('%PDF-')
    expect(received(message.message_id)).toHaveLength(0)
  })

  it("keeps another tenant out of these messages and invoices (404, nothing sent)", async () => {
    const other = (await h.newTenant()).apiKey
    const [message] = (await call(h, 'GET', '/v1/communications?kind=invoice&limit=1')).items
    const sent = smtp.messages.length
    expect((await h.http('GET', `/v1/communications/${message.id}`, { key: other })).status).toBe(404)
    expect((await h.http('GET', '/v1/communications', { key: other })).body.items).toEqual([])
    expect((await h.http('GET', `/v1/invoices/${message.invoice_id}/dunning`, { key: other })).status).toBe(404)
    expect((await h.http('POST', `/v1/invoices/${message.invoice_id}/comms/trigger`, { key: other })).status).toBe(404)
    expect(smtp.messages).toHaveLength(sent)
  })

  it('never sends twice when the sender is killed between the server accepting and the record (at most once per claim)', async () => {
    const invoice = await finalizedInvoice(cust.id, '99.00')
    // The worker processes take the database over: the API's process lets it go.
    await h.running.stop()
    smtp.onReceived = () => child?.kill('SIGKILL')
    expect(await runChild(0)).toBeNull()
    smtp.onReceived = undefined
    const sent = smtp.messages.filter((m) => m.raw.includes(invoice.invoice_number))
    expect(sent).toHaveLength(1)

    // Restarted past the claim's lease: unknown (it may have been delivered, as it was), never resent.
    const after = await runChild(5 * 60_000)
    expect(after!.summary).toMatchObject({ unknown: 1 })
    expect(after!.rows.filter((r: any) => r.invoice_id === invoice.id)).toEqual([expect.objectContaining({ delivery_status: 'unknown', attempts: 1 })])
    expect(smtp.messages.filter((m) => m.raw.includes(invoice.invoice_number))).toHaveLength(1)
  })
})

/** One run of the communications job in a process of its own, on a clock moved by `offsetMs`; null when killed. */
const runChild = (offsetMs: number) =>
  runWorkerChild<{ summary: Record<string, number>; rows: any[] }>(h, 'test/communications-child.ts', [String(offsetMs)], (started) => (child = started), { SMTP_URL: smtp.url })
