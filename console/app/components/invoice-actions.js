// What can be done to an invoice, each calling the API and showing its error body when refused:
// finalize, void, record a payment, create a credit note (from what each line can still be credited).
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { compareDecimal, isDecimal, money } from '../lib/format.js'
import { WriteButton } from './ui.js'

const REASONS = ['BILLING_ERROR', 'DUPLICATE', 'FRAUDULENT', 'ORDER_CHANGE', 'UNSATISFACTORY', 'SERVICE_ISSUE', 'SUBSCRIPTION_CANCELLATION']

/** Which status a payment of `amount` gives, as the API decides it (it refuses a mismatch). */
function paymentStatusFor(amount, remaining) {
  const c = compareDecimal(amount, remaining)
  return c < 0 ? 'PENDING' : c === 0 ? 'SUCCEEDED' : 'OVERPAID'
}

export function PaymentForm({ invoice, onDone }) {
  const { api } = useSession()
  const [amount, setAmount] = useState(invoice.amount_remaining)
  const bad = !isDecimal(amount)
  return html`<form class="inline-form" onSubmit=${(e) => e.preventDefault()}>
    <label>Amount (${invoice.currency}) <input name="payment_amount" inputmode="decimal" value=${amount} onInput=${(e) => setAmount(e.currentTarget.value)} /></label>
    <${WriteButton} disabled=${bad} onClick=${async () => onDone(await api.put(`/v1/invoices/${invoice.id}/payment`, { payment_status: paymentStatusFor(amount, invoice.amount_remaining), amount: amount.trim() }))}>Record payment<//>
  </form>`
}

export function CreditNoteForm({ invoice, creditable, onDone }) {
  const { api } = useSession()
  const [reason, setReason] = useState('BILLING_ERROR')
  const [amounts, setAmounts] = useState(() => Object.fromEntries(creditable.lines.map((l) => [l.invoice_line_item_id, ''])))
  const lines = invoice.line_items ?? []
  const chosen = Object.entries(amounts).filter(([, v]) => v.trim() !== '')
  const bad = chosen.length === 0 || chosen.some(([, v]) => !isDecimal(v))
  const create = async () => {
    const note = await api.post('/v1/creditnotes', { invoice_id: invoice.id, reason, line_items: chosen.map(([id, amount]) => ({ invoice_line_item_id: id, amount: amount.trim() })) })
    onDone(note)
  }
  return html`<form class="stack-form" onSubmit=${(e) => e.preventDefault()}>
    <label>Reason <select name="reason" value=${reason} onChange=${(e) => setReason(e.currentTarget.value)}>${REASONS.map((r) => html`<option>${r}</option>`)}</select></label>
    <table class="list compact">
      <thead><tr><th>Line</th><th class="num">Can be credited</th><th class="num">Credit</th></tr></thead>
      <tbody>${creditable.lines.map((l) => {
        const line = lines.find((x) => x.id === l.invoice_line_item_id)
        const over = amounts[l.invoice_line_item_id] && isDecimal(amounts[l.invoice_line_item_id]) && compareDecimal(amounts[l.invoice_line_item_id], l.amount) > 0
        return html`<tr><td>${line?.display_name ?? l.invoice_line_item_id}</td><td class="num">${money(l.amount, invoice.currency)}</td>
          <td class="num"><input name=${`credit_${l.invoice_line_item_id}`} class=${over ? 'invalid' : ''} inputmode="decimal" placeholder="0.00" value=${amounts[l.invoice_line_item_id]}
            onInput=${(e) => setAmounts({ ...amounts, [l.invoice_line_item_id]: e.currentTarget.value })} /></td></tr>`
      })}</tbody>
    </table>
    <${WriteButton} disabled=${bad} onClick=${create}>Create credit note<//>
  </form>`
}

/** Finalize / void: the API's answer decides; the page reloads the invoice after either. */
export function StatusActions({ invoice, onDone }) {
  const { api } = useSession()
  const paid = compareDecimal(invoice.amount_paid, '0') > 0
  return html`<div class="actions">
    ${invoice.invoice_status === 'DRAFT' && html`<${WriteButton} kind="primary" onClick=${async () => onDone(await api.post(`/v1/invoices/${invoice.id}/finalize`))}>Finalize<//>`}
    ${(invoice.invoice_status === 'DRAFT' || (invoice.invoice_status === 'FINALIZED' && !paid)) &&
    html`<${WriteButton} kind="danger" confirm="Void this invoice? It cannot be undone." onClick=${async () => onDone(await api.post(`/v1/invoices/${invoice.id}/void`))}>Void<//>`}
  </div>`
}

