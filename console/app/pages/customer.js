// One customer: details, subscriptions, entitlements (merged across subscriptions and addons),
// wallets, invoices, a usage chart and the usage reconciliation for them.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { href } from '../lib/route.js'
import { day, decimal } from '../lib/format.js'
import { Badge, Empty, ErrorBox, Facts, Id, Loading, Pager, Section } from '../components/ui.js'
import { InvoiceTable } from '../components/invoice-table.js'
import { Wallet } from '../components/wallet.js'
import { UsagePanel } from '../components/usage-panel.js'
import { ReconciliationPanel } from '../components/reconciliation.js'

/** A section that loads its own list and shows its own error, so one failing part never blanks the page. */
function Loaded({ result, children }) {
  if (result.error) return html`<${ErrorBox} error=${result.error} />`
  if (!result.data) return html`<${Loading} />`
  return children(result.data)
}

function Subscriptions({ id }) {
  const { api } = useSession()
  const subs = useApi(() => api.get(`/v1/customers/${id}/subscriptions`, { limit: 100 }), [api, id])
  return html`<${Section} title="Subscriptions"><${Loaded} result=${subs}>${(d) =>
    d.items.length === 0
      ? html`<${Empty}>No subscriptions. Subscribe the customer to a plan with POST /v1/subscriptions.<//>`
      : html`<table class="list"><thead><tr><th>Plan</th><th>Status</th><th>Period</th><th>Current period</th><th>Currency</th></tr></thead>
          <tbody>${d.items.map(
            (s) => html`<tr><td>${s.plan?.name ?? s.plan_id}</td><td><${Badge} value=${s.subscription_status} /></td><td>${s.billing_period}</td>
              <td>${day(s.current_period_start)} – ${day(s.current_period_end)}</td><td>${s.currency}</td></tr>`,
          )}</tbody></table>`}<//><//>`
}

function Entitlements({ id }) {
  const { api } = useSession()
  const ents = useApi(() => api.get(`/v1/customers/${id}/entitlements`), [api, id])
  const value = (e) =>
    !e.is_enabled ? 'disabled' : e.usage_limit !== null && e.usage_limit !== undefined ? `${decimal(String(e.usage_limit))}${e.usage_reset_period ? ` / ${e.usage_reset_period.toLowerCase()}` : ''}${e.is_soft_limit ? ' (soft)' : ''}` : e.static_values?.length ? e.static_values.join(', ') : 'unlimited'
  return html`<${Section} title="Entitlements"><${Loaded} result=${ents}>${(d) =>
    d.features.length === 0
      ? html`<${Empty}>No entitlements: the customer's plans and addons grant none.<//>`
      : html`<table class="list"><thead><tr><th>Feature</th><th>Type</th><th>Allowed</th><th>From</th></tr></thead>
          <tbody>${d.features.map(
            (f) => html`<tr><td>${f.feature.name}</td><td>${f.feature.type}</td><td>${value(f.entitlement)}</td>
              <td>${f.sources.map((s) => `${s.entity_type} ${s.entity_name ?? s.entity_id}`).join(', ')}</td></tr>`,
          )}</tbody></table>`}<//><//>`
}

function Wallets({ id }) {
  const { api } = useSession()
  const wallets = useApi(() => api.get('/v1/wallets', { customer_id: id, limit: 20 }), [api, id])
  return html`<${Section} title="Wallets"><${Loaded} result=${wallets}>${(d) =>
    d.items.length === 0 ? html`<${Empty}>No wallet. Create one with POST /v1/wallets (docs/credits.md).<//>` : d.items.map((w) => html`<${Wallet} wallet=${w} />`)}<//><//>`
}

function Invoices({ id }) {
  const { api } = useSession()
  const [offset, setOffset] = useState(0)
  const list = useApi(() => api.get('/v1/invoices', { customer_id: id, limit: 10, offset }), [api, id, offset])
  return html`<${Section} title="Invoices"><${Loaded} result=${list}>${(d) =>
    d.items.length === 0 ? html`<${Empty}>No invoices yet: the billing run creates them at each period's end.<//>` : html`<${InvoiceTable} items=${d.items} showCustomer=${false} />`}<//>
    <${Pager} pagination=${list.data?.pagination} onOffset=${setOffset} /><//>`
}

export function CustomerPage({ id }) {
  const { api } = useSession()
  const customer = useApi(() => api.get(`/v1/customers/${id}`), [api, id])
  const c = customer.data
  return html`<p class="crumbs"><a href=${href(['customers'])}>Customers</a> ›</p>
    <${ErrorBox} error=${customer.error} />
    ${!c && !customer.error && html`<${Loading} />`}
    ${c &&
    html`<header class="page-head"><h1 data-customer-name>${c.name || c.external_id}</h1>
        <${Facts} items=${[
          ['External id', html`<${Id} value=${c.external_id} />`],
          ['Id', html`<${Id} value=${c.id} />`],
          ['E-mail', c.email],
          ['Address', [c.address_line1, c.address_city, c.address_country].filter(Boolean).join(', ') || null],
          ['Since', day(c.created_at)],
        ]} />
      </header>
      <${Section} title="Usage"><${UsagePanel} customer=${c.external_id} /><//>
      <${Section} title="Usage reconciliation"><${ReconciliationPanel} customerId=${c.id} /><//>
      <div class="grid2"><${Subscriptions} id=${id} /><${Entitlements} id=${id} /></div>
      <${Wallets} id=${id} />
      <${Invoices} id=${id} />`}`
}
