// Pricing: simulate a price change on past usage (POST /v1/pricing/simulations), then see its totals, the
// distribution of customers by how much they move (a bar chart), the top movers, and the CSV. A simulation has its
// own address (#/pricing/sim_…), so its result can be shared and reopened.
import { html, useEffect, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { href } from '../lib/route.js'
import { decimal, money } from '../lib/format.js'
import { saveResponse } from '../lib/download.js'
import { Badge, Empty, ErrorBox, Facts, Id, Loading, Section, WriteButton } from '../components/ui.js'

const isoDay = (d) => d.toISOString().slice(0, 10)
/** The first of the month `monthsBack` months ago, UTC. */
const monthStart = (monthsBack) => {
  const now = new Date()
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsBack, 1))
}

/** The candidate form: one price's new terms, or another plan. */
function NewSimulation() {
  const { api } = useSession()
  const plans = useApi(() => api.get('/v1/plans', { limit: 100 }), [api])
  const [kind, setKind] = useState('price')
  const [form, setForm] = useState({ name: 'Price change', start: isoDay(monthStart(3)), end: isoDay(new Date(Date.now() + 86_400_000)), price_id: '', amount: '', allowance: '', plan_id: '' })
  const set = (field) => (e) => setForm({ ...form, [field]: e.currentTarget.value })
  const prices = (plans.data?.items ?? []).flatMap((p) => (p.prices ?? []).map((pr) => ({ ...pr, plan: p.name })))

  const run = async () => {
    const override = { price_id: form.price_id }
    if (form.amount !== '') override.amount = form.amount
    if (form.allowance !== '') override.allowance = Number(form.allowance)
    const candidate = kind === 'price' ? { price_overrides: [override] } : { plan_id: form.plan_id }
    const sim = await api.post('/v1/pricing/simulations', { name: form.name, start_time: `${form.start}T00:00:00Z`, end_time: `${form.end}T00:00:00Z`, candidate })
    location.hash = href(['pricing', sim.id])
  }

  return html`<${Section} title="Simulate a price change">
    <p class="muted small">Bills every customer's invoices dated in the range again, with the same billing engine and the same stored usage: once as their prices are today, once with the change. Nothing is invoiced.</p>
    <${ErrorBox} error=${plans.error} />
    <form class="controls" onSubmit=${(e) => e.preventDefault()}>
      <label>Name <input name="name" value=${form.name} onInput=${set('name')} /></label>
      <label>Invoices from <input name="start" type="date" value=${form.start} onInput=${set('start')} /></label>
      <label>until <input name="end" type="date" value=${form.end} onInput=${set('end')} /></label>
      <label>Change <select name="kind" value=${kind} onChange=${(e) => setKind(e.currentTarget.value)}><option value="price">one price</option><option value="plan">to another plan</option></select></label>
    </form>
    ${kind === 'price'
      ? html`<form class="controls" onSubmit=${(e) => e.preventDefault()}>
          <label>Price <select name="price_id" value=${form.price_id} onChange=${set('price_id')}>
            <option value="">choose a price</option>
            ${prices.map((p) => html`<option value=${p.id}>${p.plan} — ${p.display_name ?? p.type} (${money(p.amount, p.currency)}, ${p.billing_model})</option>`)}
          </select></label>
          <label>New amount <input name="amount" inputmode="decimal" value=${form.amount} onInput=${set('amount')} placeholder="as today" /></label>
          <label>Units included <input name="allowance" inputmode="numeric" value=${form.allowance} onInput=${set('allowance')} placeholder="as today" /></label>
        </form>`
      : html`<form class="controls" onSubmit=${(e) => e.preventDefault()}>
          <label>Plan <select name="plan_id" value=${form.plan_id} onChange=${set('plan_id')}>
            <option value="">choose a plan</option>
            ${(plans.data?.items ?? []).map((p) => html`<option value=${p.id}>${p.name}</option>`)}
          </select></label>
        </form>`}
    <${WriteButton} kind="primary" onClick=${run}>Run the simulation<//>
  <//>`
}

const bucketLabel = (b) => {
  if (b.from_percent === 0 && b.to_percent === 0) return 'unchanged'
  if (b.from_percent === null) return `below ${b.to_percent}%`
  if (b.to_percent === null) return `${b.from_percent}% and more`
  return `${b.from_percent}% to ${b.to_percent}%`
}

const tone = (b) => (b.from_percent === 0 && b.to_percent === 0 ? 'same' : b.to_percent !== null && b.to_percent <= 0 ? 'down' : 'up')

/** Customers by their difference in percent, one bar per bucket, as wide as its share of the customers. */
function Distribution({ buckets, currency }) {
  const most = Math.max(1, ...buckets.map((b) => b.customers))
  return html`<figure class="distribution" aria-label="customers by change in percent">
    ${buckets.map(
      (b) => html`<div class="dist-row" data-bucket=${bucketLabel(b)}>
        <span class="dist-label">${bucketLabel(b)}</span>
        <span class="dist-bar"><span class=${`fill ${tone(b)}`} style=${`width: ${(b.customers * 100) / most}%`}></span></span>
        <span class="dist-count num">${decimal(String(b.customers))}</span>
        <span class="dist-diff num muted small">${b.customers > 0 ? money(b.difference, currency) : ''}</span>
      </div>`,
    )}
  </figure>`
}

function TopMovers({ id, currency }) {
  const { api } = useSession()
  const movers = useApi(() => api.get(`/v1/pricing/simulations/${id}/customers`, { limit: 10, sort: 'abs_difference', order: 'desc' }), [api, id])
  if (movers.error) return html`<${ErrorBox} error=${movers.error} />`
  if (!movers.data) return html`<${Loading} />`
  if (movers.data.items.length === 0) return html`<${Empty}>No customer had an invoice in the range.<//>`
  return html`<table class="list">
    <thead><tr><th>Customer</th><th class="num">Today</th><th class="num">With the change</th><th class="num">Difference</th><th class="num">%</th></tr></thead>
    <tbody>${movers.data.items.map(
      (c) => html`<tr><td><a href=${href(['customers', c.customer_id])}><${Id} value=${c.customer_id} /></a></td>
        <td class="num">${money(c.current, currency)}</td><td class="num">${money(c.candidate, currency)}</td>
        <td class="num">${money(c.difference, currency)}</td><td class="num">${c.difference_percent === null ? '—' : `${decimal(c.difference_percent)}%`}</td></tr>`,
    )}</tbody>
  </table>`
}

/** One simulation, read every second until it is done. */
function Simulation({ id }) {
  const { api } = useSession()
  const sim = useApi(() => api.get(`/v1/pricing/simulations/${id}`), [api, id])
  const done = sim.data && (sim.data.status === 'completed' || sim.data.status === 'failed')
  useEffect(() => {
    if (!sim.data || done) return undefined
    const t = setTimeout(sim.reload, 1000)
    return () => clearTimeout(t)
  }, [sim.data])
  if (sim.error) return html`<${ErrorBox} error=${sim.error} />`
  if (!sim.data) return html`<${Loading} />`
  const s = sim.data
  const t = s.totals
  const download = async () => saveResponse(await api.raw('GET', `/v1/pricing/simulations/${id}/export`), `simulation-${id}.csv`)
  return html`<${Section} title=${s.name} actions=${s.status === 'completed' && html`<button type="button" onClick=${() => download().catch(() => {})}>Download CSV</button>`}>
      <${Facts} items=${[
        ['Status', html`<${Badge} value=${s.status} />`],
        ['Invoices dated', `${s.start_time.slice(0, 10)} – ${s.end_time.slice(0, 10)}`],
        ['Progress', `${s.progress.percent}% (${s.progress.processed_subscriptions} of ${s.progress.total_subscriptions ?? '…'} subscriptions)`],
        ['Candidate', s.candidate.plan_id ? `plan ${s.candidate.plan_id}` : `${s.candidate.price_overrides.length} price change(s)`],
      ]} />
      ${s.status === 'failed' && html`<${ErrorBox} title="The simulation failed" error=${{ message: s.error }} />`}
      ${t &&
      html`<div class="totals">
        <${Facts} items=${[
          ['Today', money(t.current, s.currency)],
          ['With the change', money(t.candidate, s.currency)],
          ['Difference', html`<b>${money(t.difference, s.currency)}</b>`],
          ['Difference %', t.difference_percent === null ? '—' : `${decimal(t.difference_percent)}%`],
          ['Customers', decimal(String(t.customers))],
          ['Invoices', decimal(String(t.invoices))],
        ]} />
      </div>`}
    <//>
    ${s.distribution && html`<${Section} title="Customers by change"><${Distribution} buckets=${s.distribution} currency=${s.currency} /><//>`}
    ${s.status === 'completed' && html`<${Section} title="Top movers"><${TopMovers} id=${id} currency=${s.currency} /><//>`}`
}

export function PricingPage({ id }) {
  return html`<header class="page-head"><h1>Pricing</h1>${id && html`<a href=${href(['pricing'])}>New simulation</a>`}</header>
    ${id ? html`<${Simulation} key=${id} id=${id} />` : html`<${NewSimulation} />`}`
}
