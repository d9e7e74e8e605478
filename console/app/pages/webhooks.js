// Webhooks: endpoints, the delivery log (filterable by state), each event's attempts, and "Retry" on
// a failed event.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { when } from '../lib/format.js'
import { Badge, Empty, ErrorBox, Loading, Pager, Section, WriteButton } from '../components/ui.js'

const LIMIT = 20

function Endpoints() {
  const { api } = useSession()
  const list = useApi(() => api.get('/v1/webhooks/endpoints', { limit: 100 }), [api])
  return html`<${Section} title="Endpoints">
    <${ErrorBox} error=${list.error} />
    ${!list.data && !list.error && html`<${Loading} />`}
    ${list.data?.items.length === 0 &&
    html`<${Empty} curl=${`curl -s ${location.origin}/v1/webhooks/endpoints -H "x-api-key: $ADMIN_KEY" -d '{"url":"https://example.com/hooks"}'`}>No endpoints: events are kept but sent nowhere. Add one (admin key):<//>`}
    ${list.data?.items.length > 0 &&
    html`<table class="list"><thead><tr><th>URL</th><th>Description</th><th>Events</th><th>State</th></tr></thead><tbody>${list.data.items.map(
      (e) => html`<tr><td><code>${e.url}</code></td><td>${e.description ?? '—'}</td><td>${e.filter_types.length ? e.filter_types.join(', ') : 'all'}</td><td><${Badge} value=${e.disabled ? 'disabled' : 'active'} /></td></tr>`,
    )}</tbody></table>`}
  <//>`
}

function Attempts({ id }) {
  const { api } = useSession()
  const list = useApi(() => api.get(`/v1/webhooks/events/${id}/attempts`, { limit: 50 }), [api, id])
  if (list.error) return html`<${ErrorBox} error=${list.error} />`
  if (!list.data) return html`<${Loading} />`
  if (list.data.items.length === 0) return html`<p class="muted small">No attempt yet.</p>`
  return html`<table class="list compact"><thead><tr><th>When</th><th>URL</th><th>Status</th><th>Answer or error</th><th class="num">ms</th></tr></thead><tbody>${list.data.items.map(
    (a) => html`<tr><td>${when(a.created_at)}</td><td><code>${a.url}</code></td><td>${a.response_status_code ?? '—'}</td><td class="clip">${a.error ?? a.response ?? ''}</td><td class="num">${a.duration_ms}</td></tr>`,
  )}</tbody></table>`
}

function Deliveries() {
  const { api } = useSession()
  const [status, setStatus] = useState('')
  const [offset, setOffset] = useState(0)
  const [open, setOpen] = useState(null)
  const list = useApi(() => api.get('/v1/webhooks/events', { delivery_status: status, limit: LIMIT, offset }), [api, status, offset])
  const retry = async (id) => {
    await api.post(`/v1/webhooks/${id}/retry`)
    list.reload()
  }
  return html`<${Section} title="Delivery log">
    <form class="controls" onSubmit=${(e) => e.preventDefault()}>
      <label>Delivery <select name="delivery_status" value=${status} onChange=${(e) => (setStatus(e.currentTarget.value), setOffset(0))}>
        <option value="">any</option>${['pending', 'delivered', 'failed', 'skipped'].map((s) => html`<option>${s}</option>`)}</select></label>
    </form>
    <${ErrorBox} error=${list.error} />
    ${!list.data && !list.error && html`<${Loading} />`}
    ${list.data?.items.length === 0 && html`<${Empty}>No events${status ? ` ${status}` : ''}. Every change (a customer created, an invoice finalized) records one.<//>`}
    ${list.data?.items.length > 0 &&
    html`<table class="list"><thead><tr><th>When</th><th>Event</th><th>Entity</th><th>Delivery</th><th class="num">Attempts</th><th>Last error</th><th></th></tr></thead><tbody>${list.data.items.map(
      (e) => html`<tr data-event=${e.id}>
          <td>${when(e.created_at)}</td><td><button type="button" class="link" onClick=${() => setOpen(open === e.id ? null : e.id)}>${e.event_type}</button></td>
          <td><code>${e.entity_id}</code></td><td><${Badge} value=${e.delivery_status} /></td><td class="num">${e.attempts}</td><td class="clip">${e.last_error ?? ''}</td>
          <td>${e.delivery_status === 'failed' && html`<${WriteButton} onClick=${() => retry(e.id)}>Retry<//>`}</td>
        </tr>
        ${open === e.id && html`<tr class="expanded"><td colspan="7"><${Attempts} id=${e.id} /></td></tr>`}`,
    )}</tbody></table>`}
    <${Pager} pagination=${list.data?.pagination} onOffset=${setOffset} />
  <//>`
}

export function WebhooksPage() {
  return html`<header class="page-head"><h1>Webhooks</h1></header><${Endpoints} /><${Deliveries} />`
}
