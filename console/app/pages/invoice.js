// One invoice: lines, discounts, taxes, credits applied, payments and credit notes, with its actions
// and the PDF (fetched with the key, opened in a new tab).
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { href } from '../lib/route.js'
import { addDecimal, compareDecimal, decimal, money, when } from '../lib/format.js'
import { openInTab } from '../lib/download.js'
import { Badge, ErrorBox, Facts, Id, Loading, Section, WriteButton } from '../components/ui.js'
import { CreditNoteForm, PaymentForm, StatusActions } from '../components/invoice-actions.js'

function Lines({ invoice: i }) {
  return html`<table class="list">
    <thead><tr><th>Line</th><th>Type</th><th class="num">Quantity</th><th class="num">Amount</th><th class="num">Discount</th><th class="num">Tax</th><th class="num">Credits applied</th><th>Period</th></tr></thead>
    <tbody>${(i.line_items ?? []).map(
      (l) => html`<tr><td>${l.display_name ?? l.plan_display_name ?? l.price_id ?? l.id}</td><td>${l.price_type ?? '—'}</td><td class="num">${decimal(l.quantity)}</td>
        <td class="num">${money(l.amount, i.currency)}</td><td class="num">${money(addDecimal(l.line_item_discount, l.invoice_level_discount), i.currency)}</td>
        <td class="num">${money(l.tax_amount, i.currency)}</td><td class="num">${money(l.prepaid_credits_applied, i.currency)}</td>
        <td>${l.period_start ? `${when(l.period_start)} – ${when(l.period_end)}` : '—'}</td></tr>`,
    )}</tbody>
    <tfoot>
      <tr><td colspan="3">Subtotal</td><td class="num">${money(i.subtotal, i.currency)}</td><td colspan="4"></td></tr>
      <tr><td colspan="3">Discounts</td><td class="num">−${money(i.total_discount, i.currency)}</td><td colspan="4"></td></tr>
      <tr><td colspan="3">Tax</td><td class="num">${money(i.total_tax, i.currency)}</td><td colspan="4"></td></tr>
      <tr><td colspan="3">Credits applied</td><td class="num">−${money(i.total_prepaid_credits_applied, i.currency)}</td><td colspan="4"></td></tr>
      <tr class="total"><td colspan="3">Total</td><td class="num" data-total>${money(i.total, i.currency)}</td><td colspan="4"></td></tr>
    </tfoot>
  </table>`
}

function Adjustments({ invoice: i }) {
  const coupons = i.coupon_applications ?? []
  const taxes = i.taxes ?? []
  return html`<div class="grid2">
    <div><h3>Discounts</h3>${coupons.length === 0 ? html`<p class="muted">No coupon applied.</p>` : html`<table class="list compact"><tbody>${coupons.map(
      (c) => html`<tr><td>${c.coupon_snapshot?.name ?? c.coupon_id}</td><td>${c.discount_type}${c.discount_percentage ? ` ${c.discount_percentage}%` : ''}</td><td class="num">−${money(c.discounted_amount, i.currency)}</td></tr>`,
    )}</tbody></table>`}</div>
    <div><h3>Taxes</h3>${taxes.length === 0 ? html`<p class="muted">No tax applied.</p>` : html`<table class="list compact"><tbody>${taxes.map(
      (t) => html`<tr><td>${t.tax_rate?.name ?? t.tax_rate?.code ?? t.tax_rate_id}</td><td class="num">on ${money(t.taxable_amount, i.currency)}</td><td class="num">${money(t.tax_amount, i.currency)}</td></tr>`,
    )}</tbody></table>`}</div>
  </div>`
}

function Payments({ invoice: i, onChange }) {
  const { api } = useSession()
  const sync = useApi(() => api.get(`/v1/invoices/${i.id}/sync`), [api, i.id, i.version])
  const owes = i.invoice_status === 'FINALIZED' && compareDecimal(i.amount_remaining, '0') > 0
  return html`<${Section} title="Payments">
    <${Facts} items=${[
      ['Payment status', html`<${Badge} value=${i.payment_status} />`],
      ['Amount due', money(i.amount_due, i.currency)],
      ['Paid', money(i.amount_paid, i.currency)],
      ['Remaining', html`<span data-remaining>${money(i.amount_remaining, i.currency)}</span>`],
      ['Paid at', when(i.paid_at)],
      ['Refunded', money(i.refunded_amount, i.currency)],
    ]} />
    ${owes ? html`<${PaymentForm} invoice=${i} onDone=${onChange} />` : html`<p class="muted small">${i.invoice_status === 'DRAFT' ? 'Finalize the invoice to take payments.' : 'Nothing is owed.'}</p>`}
    <${ErrorBox} error=${sync.error} title="Provider sync" />
    ${sync.data?.items?.length > 0 && html`<p class="muted small">Payment providers: ${sync.data.items.map((s) => `${s.provider_type ?? s.provider}: ${s.sync_status ?? s.status}`).join(', ')}</p>`}
  <//>`
}

function CreditNotes({ invoice: i, onChange }) {
  const { api } = useSession()
  const [open, setOpen] = useState(false)
  const notes = useApi(() => api.get('/v1/creditnotes', { invoice_id: i.id, limit: 100 }), [api, i.id, i.version])
  const creditable = useApi(() => (open ? api.get(`/v1/invoices/${i.id}/creditable`) : undefined), [api, i.id, i.version, open])
  // A new or finalized note changes the invoice too (amounts, sometimes its version): reload both.
  const done = () => {
    setOpen(false)
    notes.reload()
    onChange()
  }
  return html`<${Section} title="Credit notes" actions=${i.invoice_status === 'FINALIZED' && html`<button type="button" onClick=${() => setOpen(!open)}>${open ? 'Cancel' : 'New credit note'}</button>`}>
    ${open && html`<${ErrorBox} error=${creditable.error} />${creditable.data && html`<${CreditNoteForm} invoice=${i} creditable=${creditable.data} onDone=${done} />`}`}
    <${ErrorBox} error=${notes.error} />
    ${notes.data?.items.length === 0 && html`<p class="muted">No credit notes.${i.invoice_status !== 'FINALIZED' ? ' A finalized invoice can be credited.' : ''}</p>`}
    ${notes.data?.items.length > 0 &&
    html`<table class="list compact"><thead><tr><th>Note</th><th>Type</th><th>Reason</th><th>Status</th><th class="num">Total</th><th></th></tr></thead><tbody>${notes.data.items.map(
      (n) => html`<tr><td>${n.credit_note_number ?? 'Draft'}</td><td>${n.credit_note_type}</td><td>${n.reason}</td><td><${Badge} value=${n.credit_note_status} /></td>
        <td class="num">${money(n.total_amount ?? n.total, i.currency)}</td>
        <td>${n.credit_note_status === 'DRAFT' && html`<${WriteButton} onClick=${async () => (await api.post(`/v1/creditnotes/${n.id}/finalize`), done())}>Finalize<//>`}</td></tr>`,
    )}</tbody></table>`}
  <//>`
}

export function InvoicePage({ id }) {
  const { api } = useSession()
  const invoice = useApi(() => api.get(`/v1/invoices/${id}`), [api, id])
  const [pdfError, setPdfError] = useState()
  const i = invoice.data
  const pdf = async () => {
    setPdfError(undefined)
    const tab = window.open('', '_blank')
    try {
      await openInTab(tab, await api.raw('GET', `/v1/invoices/${id}/pdf`))
    } catch (err) {
      tab?.close()
      setPdfError(err)
    }
  }
  return html`<p class="crumbs"><a href=${href(['invoices'])}>Invoices</a> ›</p>
    <${ErrorBox} error=${invoice.error} />
    ${!i && !invoice.error && html`<${Loading} />`}
    ${i &&
    html`<header class="page-head row">
        <div><h1>${i.invoice_number ?? 'Draft invoice'} <${Badge} value=${i.invoice_status} /></h1>
          <${Facts} items=${[
            ['Customer', html`<a href=${href(['customers', i.customer_id])}>${i.customer?.name || i.customer?.external_id || i.customer_id}</a>`],
            ['Total', html`<strong>${money(i.total, i.currency)}</strong>`],
            ['Type', `${i.invoice_type} · ${i.billing_reason ?? ''}`],
            ['Period', i.period_start ? `${when(i.period_start)} – ${when(i.period_end)}` : null],
            ['Finalized', when(i.finalized_at)],
            ['Id', html`<${Id} value=${i.id} />`],
          ]} />
        </div>
        <div class="actions">
          <${StatusActions} invoice=${i} onDone=${invoice.reload} />
          <button type="button" onClick=${pdf}>Open PDF</button>
        </div>
      </header>
      <${ErrorBox} error=${pdfError} title="PDF failed" />
      <${Section} title="Lines"><${Lines} invoice=${i} /><${Adjustments} invoice=${i} /><//>
      <div class="grid2"><${Payments} invoice=${i} onChange=${invoice.reload} /><${CreditNotes} invoice=${i} onChange=${invoice.reload} /></div>`}`
}
