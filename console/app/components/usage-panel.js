// Usage of one meter, feature or event name, for one customer or the whole environment, over a range
// and window size, optionally grouped by a property: totals, the chart and "Download CSV". The Usage
// page and each customer's page use it. Relative ranges ("last 24 hours") refresh every 5 seconds, so
// an event just sent shows up without a reload.
import { html, useEffect, useMemo, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { WINDOW_SIZES, exportRequest, loadUsage } from '../lib/usage-source.js'
import { saveResponse } from '../lib/download.js'
import { decimal } from '../lib/format.js'
import { UsageChart } from './chart.js'
import { Empty, ErrorBox, Loading } from './ui.js'

const HOUR = 3600_000
const RANGES = {
  '1h': { label: 'Last hour', ms: HOUR, window: 'MINUTE' },
  '24h': { label: 'Last 24 hours', ms: 24 * HOUR, window: 'HOUR' },
  '7d': { label: 'Last 7 days', ms: 7 * 24 * HOUR, window: '6HOUR' },
  '30d': { label: 'Last 30 days', ms: 30 * 24 * HOUR, window: 'DAY' },
  custom: { label: 'Custom range' },
}
const REFRESH_MS = 5000

/** datetime-local values are local time without a zone: what the person typed, read as their local time. */
const localInput = (d) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)

const FIRST_EVENT_CURL = (origin) =>
  `curl -s ${origin}/v1/events -H "x-api-key: $KEY" -H 'content-type: application/json' \\\n  -d '{"event_name":"api.call","external_customer_id":"cust_42","properties":{"tokens":1500}}'`

/** Meters, metered features and recently seen event names: what the chart can show. */
function useMeasures(api) {
  return useApi(async () => {
    const [meters, features, events] = await Promise.all([
      api.get('/v1/meters', { limit: 1000, sort: 'name', order: 'asc' }),
      api.get('/v1/features', { limit: 1000, sort: 'name', order: 'asc' }),
      api.get('/v1/events', { limit: 500 }),
    ])
    const byId = new Map(meters.items.map((m) => [m.id, m]))
    const list = []
    for (const f of features.items) if (f.type === 'metered' && byId.has(f.meter_id)) list.push({ id: `feature:${f.id}`, group: 'Features', label: f.name, kind: 'meter', meter: byId.get(f.meter_id), featureId: f.id })
    for (const m of meters.items) {
      const feature = features.items.find((f) => f.meter_id === m.id)
      list.push({ id: `meter:${m.id}`, group: 'Meters', label: `${m.name} (${m.aggregation.type}${m.aggregation.field ? ` of ${m.aggregation.field}` : ''})`, kind: 'meter', meter: m, featureId: feature?.id })
    }
    for (const name of [...new Set(events.items.map((e) => e.event_name))].sort()) list.push({ id: `event:${name}`, group: 'Events (count, no meter needed)', label: name, kind: 'event', eventName: name })
    return list
  }, [api])
}

export function UsagePanel({ customer, initialMeasure }) {
  const { api } = useSession()
  const measures = useMeasures(api)
  const [measureId, setMeasureId] = useState(initialMeasure ?? '')
  const [who, setWho] = useState(customer ?? '')
  const [range, setRange] = useState('24h')
  const [custom, setCustom] = useState(() => ({ from: localInput(new Date(Date.now() - 7 * 24 * HOUR)), to: localInput(new Date()) }))
  const [windowSize, setWindowSize] = useState(RANGES['24h'].window)
  const [groupBy, setGroupBy] = useState('')
  const [tick, setTick] = useState(0)
  const [csvError, setCsvError] = useState()

  const list = measures.data ?? []
  const measure = list.find((m) => m.id === measureId) ?? list[0]
  const live = range !== 'custom'

  useEffect(() => {
    if (!live) return undefined
    const t = setInterval(() => document.visibilityState === 'visible' && setTick((n) => n + 1), REFRESH_MS)
    return () => clearInterval(t)
  }, [live])

  // Nothing to chart yet: look again every few seconds, so the first event sent shows without a reload.
  const none = measures.data?.length === 0
  useEffect(() => {
    if (!none) return undefined
    const t = setInterval(() => document.visibilityState === 'visible' && measures.reload(), REFRESH_MS)
    return () => clearInterval(t)
  }, [none])

  const query = useMemo(() => {
    if (!measure) return undefined
    const end = live ? new Date() : new Date(custom.to)
    const start = live ? new Date(end.getTime() - RANGES[range].ms) : new Date(custom.from)
    return { measure, customer: who.trim() || undefined, start, end, windowSize, groupBy: groupBy.trim() || undefined }
  }, [measure, who, range, custom, windowSize, groupBy, tick])

  const usage = useApi(() => (query ? loadUsage(api, query) : undefined), [api, query])

  const pickRange = (value) => {
    setRange(value)
    if (RANGES[value].window) setWindowSize(RANGES[value].window)
  }

  const downloadCsv = async () => {
    setCsvError(undefined)
    try {
      const [path, body] = exportRequest(query)
      const res = await api.raw('POST', path, body)
      await saveResponse(res, `usage-${query.start.toISOString().slice(0, 10)}.csv`)
    } catch (err) {
      setCsvError(err)
    }
  }

  if (measures.error) return html`<${ErrorBox} error=${measures.error} />`
  if (!measures.data) return html`<${Loading} what="Loading meters" />`
  if (list.length === 0) {
    return html`<${Empty} curl=${FIRST_EVENT_CURL(location.origin)}>
      No usage yet. Send a first event (no meter needed: the chart counts events by name); it shows up here within seconds, no reload needed.
      Create a meter (POST /v1/meters, see docs/usage.md) to sum a property such as tokens.
    <//>`
  }

  const data = usage.data
  const events = data?.events
  return html`<div class="usage">
    <form class="controls" onSubmit=${(e) => e.preventDefault()}>
      <label>Measure
        <select name="measure" value=${measure.id} onChange=${(e) => setMeasureId(e.currentTarget.value)}>
          ${[...new Set(list.map((m) => m.group))].map(
            (g) => html`<optgroup label=${g}>${list.filter((m) => m.group === g).map((m) => html`<option value=${m.id}>${m.label}</option>`)}</optgroup>`,
          )}
        </select>
      </label>
      ${customer === undefined &&
      html`<label>Customer (external id)
        <input name="customer" placeholder="whole environment" value=${who} onChange=${(e) => setWho(e.currentTarget.value)} />
      </label>`}
      <label>Range
        <select name="range" value=${range} onChange=${(e) => pickRange(e.currentTarget.value)}>
          ${Object.entries(RANGES).map(([k, r]) => html`<option value=${k}>${r.label}</option>`)}
        </select>
      </label>
      ${range === 'custom' &&
      html`<label>From <input type="datetime-local" name="from" value=${custom.from} onChange=${(e) => setCustom({ ...custom, from: e.currentTarget.value })} /></label>
        <label>To <input type="datetime-local" name="to" value=${custom.to} onChange=${(e) => setCustom({ ...custom, to: e.currentTarget.value })} /></label>`}
      <label>Window
        <select name="window" value=${windowSize} onChange=${(e) => setWindowSize(e.currentTarget.value)}>
          ${WINDOW_SIZES.map((w) => html`<option value=${w}>${w}</option>`)}
        </select>
      </label>
      <label>Group by property
        <input name="group_by" placeholder=${measure.meter?.aggregation.group_by ?? 'e.g. model'} value=${groupBy} onChange=${(e) => setGroupBy(e.currentTarget.value)} />
      </label>
      <button type="button" onClick=${downloadCsv} title="POST /v1/events/analytics/export">Download CSV</button>
    </form>
    <${ErrorBox} error=${csvError} title="Download CSV failed" />

    <div class="stats">
      <div class="stat"><span>Total${data ? ` (${data.unit})` : ''}</span><strong data-stat="total">${data ? decimal(data.total) : '…'}</strong></div>
      <div class="stat"><span>Events</span><strong data-stat="events" title=${events instanceof Error ? events.message : ''}>${
        events === undefined ? '…' : events instanceof Error ? 'unavailable' : decimal(events)
      }</strong></div>
      <div class="stat"><span>Revenue</span><strong data-stat="cost">${data?.cost ? data.cost : '—'}</strong>
        ${!measure.featureId && html`<small class="hint">needs a feature</small>`}</div>
      ${data?.margins &&
      html`<div class="stat"><span>Cost to serve</span><strong data-stat="serving-cost" title="POST /v1/costs/analytics: usage × the active cost sheet">${data.margins.cost}</strong></div>
        <div class="stat"><span>Margin</span><strong data-stat="margin">${data.margins.margin}${data.margins.percent === null ? '' : ` (${data.margins.percent} %)`}</strong></div>`}
      <div class="stat"><span>Windows</span><strong>${data ? data.windows.length : '…'}</strong></div>
      ${live && html`<div class="stat live"><span>Refresh</span><strong>every 5 s${usage.loading ? ' ⟳' : ''}</strong></div>`}
    </div>
    ${events instanceof Error && html`<${ErrorBox} error=${events} title="Counting events failed" />`}
    <${ErrorBox} error=${usage.error} title=${usage.error?.status === 503 ? 'Not readable yet (retrying)' : 'Usage query failed'} />
    ${data ? html`<${UsageChart} windows=${data.windows} series=${data.series} />` : !usage.error && html`<${Loading} what="Reading usage" />`}
  </div>`
}
