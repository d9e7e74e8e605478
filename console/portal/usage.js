// Usage this billing period: each entitled feature against its limit (a meter bar), and for each metered
// feature a chart of its usage through the period with the limit as a line. Counts and sums are drawn
// cumulative (what the limit is measured against); other aggregations (max, latest, unique) per day.
import uPlot from 'uplot'
import { html, useEffect, useRef } from '../app/lib/html.js'
import { decimal, day } from '../app/lib/format.js'
import { Badge } from '../app/components/ui.js'

const ADDITIVE = new Set(['COUNT', 'SUM', 'SUM_WITH_MULTIPLIER'])

function FeatureRow({ f }) {
  const used = f.current_usage
  const limit = f.total_limit
  let gauge = html`<span class="muted">${f.feature.type === 'boolean' ? (f.is_enabled ? 'included' : 'not included') : 'unlimited'}</span>`
  if (used !== null && limit !== null) gauge = html`<meter min="0" max=${Number(limit)} high=${Number(limit) * 0.8} value=${Number(used)} title=${`${used} of ${limit}`}></meter>`
  return html`<div class="feature" data-feature=${f.feature.id}>
    <strong>${f.feature.name}</strong>
    ${gauge}
    <span class="num">${used === null ? '' : decimal(used)}${limit !== null ? ` / ${decimal(limit)}` : ''} ${f.feature.unit_plural ?? ''}
      ${f.usage_percent !== null && html` <${Badge} value=${`${f.usage_percent}%`} />`}</span>
  </div>`
}

function FeatureChart({ f }) {
  const box = useRef(null)
  useEffect(() => {
    const xs = f.points.map((p) => new Date(p.start).getTime() / 1000)
    let running = 0
    const ys = f.points.map((p) => (ADDITIVE.has(f.aggregation_type) ? (running += Number(p.value)) : Number(p.value)))
    const series = [{}, { label: ADDITIVE.has(f.aggregation_type) ? 'used (to date)' : 'used (per day)', stroke: '#2563eb', width: 2, fill: '#2563eb1f' }]
    const data = [xs, ys]
    if (f.usage_limit !== null) {
      series.push({ label: 'limit', stroke: '#b91c1c', width: 1, dash: [6, 4], points: { show: false } })
      data.push(xs.map(() => Number(f.usage_limit)))
    }
    const el = box.current
    const u = new uPlot({ width: el.clientWidth || 480, height: 220, series, scales: { x: { time: true }, y: { range: (_, min, max) => [0, max > 0 ? max * 1.1 : 1] } } }, data, el)
    const resize = new ResizeObserver(() => u.setSize({ width: el.clientWidth, height: 220 }))
    resize.observe(el)
    return () => {
      resize.disconnect()
      u.destroy()
    }
  }, [f])
  return html`<figure data-chart=${f.feature_id}><figcaption>${f.feature_name}, day by day</figcaption><div ref=${box}></div></figure>`
}

export function Usage({ usage, history }) {
  const period = usage.period
  return html`<section class="card" id="usage">
    <header class="card-head"><h2>Usage this period</h2>
      ${period && html`<span class="muted">${day(period.start_time)} – ${day(period.end_time)}</span>`}</header>
    ${usage.features.length === 0 ? html`<p class="muted">No features on your subscriptions.</p>` : usage.features.map((f) => html`<${FeatureRow} f=${f} />`)}
    ${history && history.features.length > 0 && html`<div class="charts">${history.features.map((f) => html`<${FeatureChart} f=${f} />`)}</div>`}
  </section>`
}
