// The customer's subscriptions, invoices (with their PDFs), credit notes and wallets. Every value is rendered
// as text by Preact (../app/lib/html.js), so a name or description holding markup shows as typed.
import { html, useState } from '../app/lib/html.js'
import { useApi } from '../app/lib/use-api.js'
import { saveResponse } from '../app/lib/download.js'
import { day, decimal, money, when } from '../app/lib/format.js'
import { Badge, ErrorBox, Loading } from '../app/components/ui.js'

const Card = ({ id, title, children }) => html`<section class="card" id=${id}><header class="card-head"><h2>${title}</h2></header>${children}</section>`

export const Subscriptions = ({ items }) => html`<${Card} id="subscriptions" title="Subscriptions">
  ${items.length === 0 ? html`<p class="muted">No subscriptions.</p>` : html`<table class="list">
    <thead><tr><th>Plan</th><th>Status</th><th>Billing</th><th>Current period</th></tr></thead>
    <tbody>${items.map(
      (s) => html`<tr data-subscription=${s.id}><td>${s.plan?.name ?? s.plan_id}</td><td><${Badge} value=${s.subscription_status} /></td>
        <td>${s.billing_period} · ${s.currency}</td><td>${day(s.current_period_start)} – ${day(s.current_period_end)}</td></tr>`,
    )}</tbody></table>`}
<//>`

/** Downloads a document's PDF: `kind` is its path under the portal API (invoices, creditnotes). */
function PdfButton({ api, kind, id, number }) {
  const [error, setError] = useState()
  const download = async () => {
    setError(undefined)
    try {
      await saveResponse(await api.raw(`/${kind}/${encodeURIComponent(id)}/pdf`), `${number ?? id}.pdf`)
    } catch (err) {
      setError(err)
    }
  }
  return html`<button type="button" data-pdf=${id} onClick=${download}>PDF</button><${ErrorBox} error=${error} title="Download failed" />`
}

export const Invoices = ({ api, items }) => html`<${Card} id="invoices" title="Invoices">
  ${items.length === 0 ? html`<p class="muted">No invoices yet.</p>` : html`<table class="list">
    <thead><tr><th>Invoice</th><th>Status</th><th>Payment</th><th class="num">Total</th><th class="num">Due</th><th>Due date</th><th></th></tr></thead>
    <tbody>${items.map(
      (i) => html`<tr data-invoice=${i.id}><td>${i.invoice_number ?? i.id}</td><td><${Badge} value=${i.invoice_status} /></td><td><${Badge} value=${i.payment_status} /></td>
        <td class="num">${money(i.total, i.currency)}</td><td class="num">${money(i.amount_remaining, i.currency)}</td><td>${day(i.due_date)}</td>
        <td><${PdfButton} api=${api} kind="invoices" id=${i.id} number=${i.invoice_number} /></td></tr>`,
    )}</tbody></table>`}
<//>`

export const CreditNotes = ({ api, items }) => html`<${Card} id="credit-notes" title="Credit notes">
  ${items.length === 0 ? html`<p class="muted">No credit notes.</p>` : html`<table class="list">
    <thead><tr><th>Credit note</th><th>Status</th><th>Reason</th><th class="num">Total</th><th>Date</th><th></th></tr></thead>
    <tbody>${items.map(
      (n) => html`<tr data-credit-note=${n.id}><td>${n.credit_note_number ?? n.id}</td><td><${Badge} value=${n.credit_note_status} /></td>
        <td>${n.reason}${n.memo ? html` <small class="muted">${n.memo}</small>` : ''}</td><td class="num">${money(n.total_amount, n.currency)}</td><td>${day(n.created_at)}</td>
        <td><${PdfButton} api=${api} kind="creditnotes" id=${n.id} number=${n.credit_note_number} /></td></tr>`,
    )}</tbody></table>`}
<//>`

const LEDGER = 10

function Wallet({ api, wallet }) {
  const ledger = useApi(() => api.get(`/wallets/${encodeURIComponent(wallet.id)}/transactions?limit=${LEDGER}`), [api, wallet.id])
  return html`<div class="wallet" data-wallet=${wallet.id}>
    <h3>${wallet.name ?? 'Wallet'} <${Badge} value=${wallet.wallet_status} /></h3>
    <dl class="facts">
      <div><dt>Balance</dt><dd><strong data-balance>${money(wallet.balance, wallet.currency)}</strong></dd></div>
      <div><dt>Credits</dt><dd>${decimal(wallet.credit_balance)}</dd></div>
    </dl>
    <${ErrorBox} error=${ledger.error} title="Transactions failed" />
    ${!ledger.data && !ledger.error && html`<${Loading} what="Loading transactions" />`}
    ${ledger.data && html`<table class="list compact">
      <thead><tr><th>When</th><th>Type</th><th>Reason</th><th class="num">Credits</th></tr></thead>
      <tbody>${ledger.data.items.map(
        (t) => html`<tr><td>${when(t.created_at)}</td><td>${t.type}</td><td>${t.description || t.transaction_reason}</td>
          <td class="num">${t.type === 'debit' ? '−' : '+'}${decimal(t.credit_amount)}</td></tr>`,
      )}</tbody></table>`}
  </div>`
}

export const Wallets = ({ api, items }) => html`<${Card} id="wallets" title="Wallets">
  ${items.length === 0 ? html`<p class="muted">No wallets.</p>` : items.map((w) => html`<${Wallet} api=${api} wallet=${w} />`)}
<//>`
