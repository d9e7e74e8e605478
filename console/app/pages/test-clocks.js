// Test clocks (sandbox environments): each clock's time and status, its customers, and "Advance" to move
// it forward; while it advances, the page reads its progress until it is ready.
import { html, useEffect, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { href } from '../lib/route.js'
import { when } from '../lib/format.js'
import { Badge, Empty, ErrorBox, Id, Loading, Section, WriteButton } from '../components/ui.js'

/** The value of a datetime-local input for an instant, in UTC (clocks are shown and set in UTC). */
const inputValue = (iso) => iso.slice(0, 16)

function Clock({ clock, onChanged }) {
  const { api } = useSession()
  const customers = useApi(() => api.get('/v1/customers', { test_clock_id: clock.id, limit: 100, sort: 'created_at', order: 'asc' }), [api, clock.id])
  const next = new Date(Date.parse(clock.frozen_time) + 30 * 86_400_000).toISOString()
  const [target, setTarget] = useState(inputValue(next))
  const advancing = clock.status === 'advancing'
  // While advancing, the clock is read again every half second until it is ready (every reload brings a new
  // clock object, so the next read is scheduled even when nothing moved meanwhile).
  useEffect(() => {
    if (!advancing) return
    const timer = setTimeout(onChanged, 500)
    return () => clearTimeout(timer)
  }, [clock])
  const advance = async () => {
    await api.post(`/v1/test_clocks/${clock.id}/advance`, { frozen_time: `${target}:00Z` })
    onChanged()
  }
  return html`<${Section} title=${clock.name}>
    <div data-clock=${clock.id}>
      <p>Time <b data-frozen-time>${clock.frozen_time}</b> <${Badge} value=${clock.status} />
        ${advancing && html` <span data-progress>${clock.status_details.advancing.progress_percent}% to ${when(clock.status_details.advancing.target_frozen_time)}</span>`}
        ${clock.status_details?.failure_reason && html` <small class="hint">${clock.status_details.failure_reason}</small>`}</p>
      <form class="controls" onSubmit=${(e) => e.preventDefault()}>
        <label>Advance to (UTC) <input name="advance_to" type="datetime-local" value=${target} onInput=${(e) => setTarget(e.currentTarget.value)} /></label>
        <${WriteButton} kind="primary" disabled=${advancing} onClick=${advance}>Advance<//>
      </form>
      <${ErrorBox} error=${customers.error} />
      ${!customers.data && !customers.error && html`<${Loading} />`}
      ${customers.data?.items.length === 0 && html`<${Empty}>No customer on this clock: create one with <code>"test_clock_id": "${clock.id}"</code>.<//>`}
      ${customers.data?.items.length > 0 &&
      html`<table class="list"><thead><tr><th>Customer</th><th>External id</th><th>Id</th></tr></thead><tbody>${customers.data.items.map(
        (c) => html`<tr data-customer=${c.id}><td><a href=${href(['customers', c.id])}>${c.name || c.external_id}</a></td><td>${c.external_id}</td><td><${Id} value=${c.id} /></td></tr>`,
      )}</tbody></table>`}
    </div>
  <//>`
}

export function TestClocksPage() {
  const { api, environments, environmentId } = useSession()
  const production = environments.find((e) => e.id === environmentId)?.type === 'production'
  const list = useApi(() => (production ? Promise.resolve({ items: [] }) : api.get('/v1/test_clocks', { limit: 100, sort: 'created_at', order: 'desc' })), [api, production])
  return html`<header class="page-head"><h1>Test clocks</h1></header>
    ${production && html`<${Empty}>Test clocks exist in sandbox environments only: switch to a sandbox environment.<//>`}
    <${ErrorBox} error=${list.error} />
    ${!list.data && !list.error && html`<${Loading} />`}
    ${list.data?.items.length === 0 && !production &&
    html`<${Empty} curl=${`curl -s ${location.origin}/v1/test_clocks -H "x-api-key: $KEY" -d '{"name":"Trial","frozen_time":"${new Date().toISOString()}"}'`}>No test clock yet. Make one:<//>`}
    ${list.data?.items.map((clock) => html`<${Clock} key=${clock.id} clock=${clock} onChanged=${list.reload} />`)}`
}
