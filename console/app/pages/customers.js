// Customers: a searchable, paginated list.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { href } from '../lib/route.js'
import { day } from '../lib/format.js'
import { Empty, ErrorBox, Id, Loading, Pager } from '../components/ui.js'

const LIMIT = 20

export function CustomersPage() {
  const { api } = useSession()
  const [name, setName] = useState('')
  const [externalId, setExternalId] = useState('')
  const [offset, setOffset] = useState(0)
  const list = useApi(() => api.get('/v1/customers', { limit: LIMIT, offset, sort: 'created_at', order: 'desc', name: name.trim(), external_id: externalId.trim() }), [api, offset, name, externalId])
  const search = (set) => (e) => {
    set(e.currentTarget.value)
    setOffset(0)
  }
  return html`<header class="page-head"><h1>Customers</h1></header>
    <section class="card">
      <form class="controls" onSubmit=${(e) => e.preventDefault()}>
        <label>Name contains <input name="q" type="search" value=${name} onChange=${search(setName)} placeholder="Acme" /></label>
        <label>External id <input name="external_id" type="search" value=${externalId} onChange=${search(setExternalId)} placeholder="exact" /></label>
      </form>
      <${ErrorBox} error=${list.error} />
      ${!list.data && !list.error && html`<${Loading} />`}
      ${list.data?.items.length === 0 &&
      (name || externalId
        ? html`<${Empty}>No customer matches. Clear the search to see all.<//>`
        : html`<${Empty} curl=${`curl -s ${location.origin}/v1/customers -H "x-api-key: $KEY" -d '{"external_id":"cust_42","name":"Acme"}'`}>No customers yet. Create one (or send an event: usage is counted by external id even before the customer exists).<//>`)}
      ${list.data?.items.length > 0 &&
      html`<table class="list">
        <thead><tr><th>Name</th><th>External id</th><th>E-mail</th><th>Country</th><th>Created</th></tr></thead>
        <tbody>${list.data.items.map(
          (c) => html`<tr>
            <td><a href=${href(['customers', c.id])}>${c.name || '(no name)'}</a></td>
            <td><${Id} value=${c.external_id} /></td><td>${c.email ?? '—'}</td><td>${c.address_country ?? '—'}</td><td>${day(c.created_at)}</td>
          </tr>`,
        )}</tbody>
      </table>`}
      <${Pager} pagination=${list.data?.pagination} onOffset=${setOffset} />
    </section>`
}
