// A table of invoices, shared by the Invoices page and a customer's page.
import { html } from '../lib/html.js'
import { href } from '../lib/route.js'
import { day, money } from '../lib/format.js'
import { Badge } from './ui.js'

export const InvoiceTable = ({ items, showCustomer = true }) => html`<table class="list">
  <thead><tr><th>Invoice</th>${showCustomer && html`<th>Customer</th>`}<th>Status</th><th>Payment</th><th class="num">Total</th><th class="num">Due</th><th>Created</th></tr></thead>
  <tbody>${items.map(
    (i) => html`<tr>
      <td><a href=${href(['invoices', i.id])}>${i.invoice_number ?? 'Draft'}</a> <small class="muted">${i.invoice_type}</small></td>
      ${showCustomer && html`<td><a href=${href(['customers', i.customer_id])}>${i.customer?.name || i.customer_id}</a></td>`}
      <td><${Badge} value=${i.invoice_status} /></td><td><${Badge} value=${i.payment_status} /></td>
      <td class="num">${money(i.total, i.currency)}</td><td class="num">${money(i.amount_remaining, i.currency)}</td><td>${day(i.created_at)}</td>
    </tr>`,
  )}</tbody>
</table>`
