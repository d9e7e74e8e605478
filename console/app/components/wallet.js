// One wallet: its real-time balance (balance − holds − unbilled usage − unpaid invoices), its active credit
// holds, and its ledger, paginated.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { decimal, money, when } from '../lib/format.js'
import { Badge, ErrorBox, Facts, Loading, Pager } from './ui.js'

const LIMIT = 10

export function Wallet({ wallet }) {
  const { api } = useSession()
  const [offset, setOffset] = useState(0)
  const live = useApi(() => api.get(`/v1/wallets/${wallet.id}/balance/real-time`), [api, wallet.id])
  const ledger = useApi(() => api.get(`/v1/wallets/${wallet.id}/transactions`, { limit: LIMIT, offset }), [api, wallet.id, offset])
  const holds = useApi(() => api.get(`/v1/wallets/${wallet.id}/holds`, { status: 'active', limit: LIMIT }), [api, wallet.id])
  const b = live.data
  return html`<div class="wallet">
    <h3>${wallet.name} <${Badge} value=${wallet.wallet_status} /></h3>
    <${ErrorBox} error=${live.error} title="Real-time balance failed" />
    <${Facts} items=${[
      ['Real-time balance', b ? html`<strong data-balance>${money(b.real_time_balance, wallet.currency)}</strong>` : '…'],
      ['Balance', money(wallet.balance, wallet.currency)],
      ['Credits', decimal(wallet.credit_balance)],
      ['Held', html`<span data-held>${decimal(wallet.held_balance)}</span>`],
      ['Available', html`<span data-available>${decimal(wallet.available_balance)}</span>`],
      ['Unbilled usage', b ? money(b.current_period_usage, wallet.currency) : '…'],
      ['Unpaid invoices', b ? money(b.unpaid_invoices_amount, wallet.currency) : '…'],
    ]} />
    <${ErrorBox} error=${holds.error} title="Holds failed" />
    ${holds.data && holds.data.items.length > 0 &&
    html`<table class="list compact" data-holds>
      <caption>Active holds (${holds.data.pagination.total})</caption>
      <thead><tr><th>Hold</th><th>Since</th><th>Expires</th><th>Feature</th><th class="num">Quantity</th><th class="num">Credits</th></tr></thead>
      <tbody>${holds.data.items.map(
        (x) => html`<tr><td><code>${x.id}</code></td><td>${when(x.created_at)}</td><td>${when(x.expires_at)}</td><td>${x.feature_id ?? '—'}</td>
          <td class="num">${x.quantity === null ? '—' : decimal(x.quantity)}</td><td class="num">${decimal(x.amount)}</td></tr>`,
      )}</tbody>
    </table>`}
    <${ErrorBox} error=${ledger.error} title="Ledger failed" />
    ${!ledger.data && !ledger.error && html`<${Loading} what="Loading the ledger" />`}
    ${ledger.data &&
    html`<table class="list compact">
      <thead><tr><th>When</th><th>Type</th><th>Reason</th><th class="num">Credits</th><th class="num">Available</th><th>Status</th></tr></thead>
      <tbody>${ledger.data.items.map(
        (t) => html`<tr><td>${when(t.created_at)}</td><td>${t.type}</td><td>${t.transaction_reason}</td>
          <td class="num">${t.type === 'debit' ? '−' : '+'}${decimal(t.credit_amount)}</td><td class="num">${decimal(t.credits_available)}</td><td><${Badge} value=${t.transaction_status} /></td></tr>`,
      )}</tbody>
    </table>`}
    <${Pager} pagination=${ledger.data?.pagination} onOffset=${setOffset} />
  </div>`
}
