// A customer's usage reconciliation for a calendar month (GET /v1/customers/{id}/usage/reconciliation): per meter,
// events received, stored, corrected, counted, billed, adjusted and unsettled. Unsettled ≠ 0 is flagged: late or
// corrected usage the usage-adjustments job has not settled yet.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { Empty, ErrorBox, Loading } from './ui.js'

const COLUMNS = ['received', 'stored', 'corrected', 'counted', 'billed', 'adjusted', 'unsettled']
const monthName = new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' })

/** The current UTC calendar month and the two before it, newest first: [start, end) as ISO strings. */
function recentMonths(now = new Date()) {
  return [0, -1, -2].map((offset) => {
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1))
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset + 1, 1))
    return { start: start.toISOString(), end: end.toISOString(), label: monthName.format(start) }
  })
}

const cell = (m, column) => {
  const v = m[column]
  if (v === null || v === undefined) return html`<td class="num muted" title="the meter is still counting its first backfill">—</td>`
  if (column === 'unsettled' && v !== 0) return html`<td class="num" data-unsettled-flag><span class="badge warn">${v}</span></td>`
  return html`<td class="num">${v}</td>`
}

export function ReconciliationPanel({ customerId }) {
  const { api } = useSession()
  const months = recentMonths()
  // Last month by default: the most recent one whose invoice is likely finalized.
  const [picked, setPicked] = useState(months[1].start)
  const period = months.find((m) => m.start === picked) ?? months[1]
  const report = useApi(() => api.get(`/v1/customers/${customerId}/usage/reconciliation`, { start_time: period.start, end_time: period.end }), [api, customerId, period.start])
  const meters = report.data?.meters
  const unsettled = meters?.some((m) => m.unsettled !== null && m.unsettled !== 0)
  return html`<div data-reconciliation>
    <form class="controls" onSubmit=${(e) => e.preventDefault()}>
      <label>Period (UTC month)
        <select name="reconciliation-period" value=${period.start} onChange=${(e) => setPicked(e.currentTarget.value)}>
          ${months.map((m) => html`<option value=${m.start}>${m.label}</option>`)}
        </select>
      </label>
    </form>
    <${ErrorBox} error=${report.error} />
    ${!meters && !report.error && html`<${Loading} />`}
    ${meters?.length === 0 && html`<${Empty}>No events and no billed usage in this period.<//>`}
    ${meters?.length > 0 &&
    html`<table class="list"><thead><tr><th>Meter</th>${COLUMNS.map((c) => html`<th class="num">${c[0].toUpperCase() + c.slice(1)}</th>`)}</tr></thead>
      <tbody>${meters.map((m) => html`<tr data-meter=${m.meter_id}><td>${m.meter_name}</td>${COLUMNS.map((c) => cell(m, c))}</tr>`)}</tbody></table>`}
    ${unsettled && html`<p class="hint" data-unsettled-note>Unsettled ≠ 0: late or corrected usage not yet settled: the usage-adjustments job issues the difference.</p>`}
  </div>`
}
