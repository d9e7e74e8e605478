// Catalog, read-only: plans with their prices and entitlements, meters, features.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { href } from '../lib/route.js'
import { day, decimal, money } from '../lib/format.js'
import { Badge, Empty, ErrorBox, Id, Loading, Pager } from '../components/ui.js'

const LIMIT = 20
const TABS = [
  ['plans', 'Plans'],
  ['meters', 'Meters'],
  ['features', 'Features'],
]

/** A paginated list of one catalog resource, rendered by `render(items)`. */
function Paged({ path, render, empty }) {
  const { api } = useSession()
  const [offset, setOffset] = useState(0)
  const list = useApi(() => api.get(path, { limit: LIMIT, offset }), [api, path, offset])
  return html`<${ErrorBox} error=${list.error} />
    ${!list.data && !list.error && html`<${Loading} />`}
    ${list.data && (list.data.items.length === 0 ? empty : render(list.data.items))}
    <${Pager} pagination=${list.data?.pagination} onOffset=${setOffset} />`
}

const priceText = (p) => {
  const per = p.type === 'USAGE' ? ' per unit' : ''
  if (p.billing_model === 'TIERED') return `tiered (${p.tier_mode ?? ''}, ${p.tiers?.length ?? 0} tiers)`
  if (p.billing_model === 'PACKAGE') return `${money(p.amount, p.currency)} per ${p.transform_quantity?.divide_by ?? '?'} units`
  return `${money(p.amount, p.currency)}${per}`
}

const entitlementText = (e) =>
  !e.is_enabled ? 'disabled' : e.usage_limit !== null && e.usage_limit !== undefined ? `${decimal(String(e.usage_limit))} / ${(e.usage_reset_period ?? 'period').toLowerCase()}` : e.static_value ?? 'enabled'

const Plans = () => html`<${Paged}
  path="/v1/plans"
  empty=${html`<${Empty} curl=${`curl -s ${location.origin}/v1/plans -H "x-api-key: $KEY" -d '{"name":"Pro"}'`}>No plans yet. Create one, then add prices (POST /v1/prices) and entitlements (docs/catalog.md).<//>`}
  render=${(items) =>
    items.map(
      (p) => html`<article class="plan">
        <h3>${p.name} <small class="muted">${p.lookup_key ?? ''}</small></h3>
        ${p.description && html`<p class="muted">${p.description}</p>`}
        <div class="grid2">
          <div><h4>Prices</h4>${(p.prices ?? []).length === 0 ? html`<p class="muted">No prices.</p>` : html`<table class="list compact"><tbody>${p.prices.map(
            (pr) => html`<tr><td>${pr.display_name ?? (pr.type === 'USAGE' ? 'Usage' : 'Fixed')}</td><td>${pr.type} · ${pr.billing_model} · ${pr.billing_period}</td><td class="num">${priceText(pr)}</td></tr>`,
          )}</tbody></table>`}</div>
          <div><h4>Entitlements</h4>${(p.entitlements ?? []).length === 0 ? html`<p class="muted">No entitlements.</p>` : html`<table class="list compact"><tbody>${p.entitlements.map(
            (e) => html`<tr><td>${e.feature?.name ?? e.feature_id}</td><td>${e.feature_type}</td><td class="num">${entitlementText(e)}</td></tr>`,
          )}</tbody></table>`}</div>
        </div>
      </article>`,
    )}
/>`

const Meters = () => html`<${Paged}
  path="/v1/meters"
  empty=${html`<${Empty} curl=${`curl -s ${location.origin}/v1/meters -H "x-api-key: $KEY" -d '{"name":"API calls","event_name":"api.call","aggregation":{"type":"COUNT"}}'`}>No meters yet: a meter counts events into billable usage.<//>`}
  render=${(items) => html`<table class="list">
    <thead><tr><th>Name</th><th>Event name</th><th>Aggregation</th><th>Filters</th><th>Backfill</th><th>Created</th></tr></thead>
    <tbody>${items.map(
      (m) => html`<tr><td>${m.name}</td><td><code>${m.event_name}</code></td>
        <td>${m.aggregation.type}${m.aggregation.field ? ` of ${m.aggregation.field}` : ''}${m.aggregation.group_by ? ` by ${m.aggregation.group_by}` : ''}</td>
        <td>${m.filters.map((f) => `${f.key} ∈ {${f.values.join(', ')}}`).join('; ') || '—'}</td>
        <td><${Badge} value=${m.backfill?.status ?? 'done'} /></td><td>${day(m.created_at)}</td></tr>`,
    )}</tbody></table>`}
/>`

const Features = () => html`<${Paged}
  path="/v1/features"
  empty=${html`<${Empty}>No features yet. A feature names what plans entitle (POST /v1/features).<//>`}
  render=${(items) => html`<table class="list">
    <thead><tr><th>Name</th><th>Type</th><th>Lookup key</th><th>Meter</th><th>Created</th></tr></thead>
    <tbody>${items.map((f) => html`<tr><td>${f.name}</td><td>${f.type}</td><td>${f.lookup_key ?? '—'}</td><td>${f.meter_id ? html`<${Id} value=${f.meter_id} />` : '—'}</td><td>${day(f.created_at)}</td></tr>`)}</tbody></table>`}
/>`

export function CatalogPage({ tab = 'plans' }) {
  const View = { plans: Plans, meters: Meters, features: Features }[tab] ?? Plans
  return html`<header class="page-head"><h1>Catalog</h1></header>
    <nav class="tabs">${TABS.map(([id, label]) => html`<a href=${href(['catalog', id])} class=${tab === id ? 'on' : ''}>${label}</a>`)}</nav>
    <section class="card"><${View} /></section>`
}
