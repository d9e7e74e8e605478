// The usage chart's one data source. A feature's usage (a meter a feature uses) comes from
// POST /v1/events/analytics: its windows, grouped by a property, with event counts and cost. A meter
// without a feature and an event name without a meter come from POST /v1/events/usage/meter and
// POST /v1/events/usage (raw events: counts, and grouping by a property); they have no cost. With a cost sheet, a
// feature's cost to serve and margin come from POST /v1/costs/analytics.
// Pages only see the shape returned here:
//   {windows: [ms], series: [{name, values: [number], total: "decimal"}], total, events, cost, margins, unit}
import { compareDecimal, sumDecimal } from './format.js'

export const WINDOW_SIZES = ['MINUTE', '15MIN', '30MIN', 'HOUR', '3HOUR', '6HOUR', '12HOUR', 'DAY', 'WEEK', 'MONTH']

/** The meter's property filters in the usage query's shape: [{key, values}] → {key: values}. */
const filtersOf = (meter) => Object.fromEntries((meter.filters ?? []).map((f) => [f.key, f.values]))

function rangeBody(q) {
  return {
    start_time: q.start.toISOString(),
    end_time: q.end.toISOString(),
    window_size: q.windowSize,
    ...(q.customer ? { external_customer_id: q.customer } : {}),
  }
}

/** The request that reads the measure's windows, grouped by `groupBy` (a property) when asked. */
function usageRequest(q) {
  const m = q.measure
  if (m.kind === 'event') {
    return ['/v1/events/usage', { event_name: m.eventName, aggregation_type: 'COUNT', ...(q.groupBy ? { group_by: q.groupBy } : {}), ...rangeBody(q) }]
  }
  const meter = m.meter
  const own = meter.aggregation.group_by
  // A meter's own windows, or grouped by its own group_by property: the stored meter answers.
  if (!q.groupBy || q.groupBy === own) return ['/v1/events/usage/meter', { meter_id: meter.id, ...rangeBody(q) }]
  // Another property: the same aggregation over the meter's raw events, grouped by it.
  const a = meter.aggregation
  const filters = filtersOf(meter)
  return [
    '/v1/events/usage',
    {
      event_name: meter.event_name,
      aggregation_type: a.type,
      ...(a.field ? { property_name: a.field } : {}),
      ...(a.multiplier ? { multiplier: String(a.multiplier) } : {}),
      ...(a.bucket_size ? { bucket_size: a.bucket_size } : {}),
      ...(Object.keys(filters).length ? { filters } : {}),
      group_by: q.groupBy,
      ...rangeBody(q),
    },
  ]
}

/** Turns the API's windows into chart series: one per group (sorted by total, largest first), or one. */
function toSeries(answer, label, grouped) {
  const windows = answer.results.map((r) => Date.parse(r.start))
  if (!grouped) {
    return { windows, series: [{ name: label, values: answer.results.map((r) => Number(r.value)), total: answer.value }] }
  }
  const names = [...new Set(answer.results.flatMap((r) => Object.keys(r.groups ?? {})))]
  const series = names.map((name) => {
    const texts = answer.results.map((r) => r.groups?.[name] ?? '0')
    // Plotted as numbers; the total is the exact sum of the API's decimal strings.
    return { name: name === '' ? '(none)' : name, values: texts.map(Number), total: sumDecimal(texts) }
  })
  return { windows, series: byTotal(series) }
}

/** Series largest total first, totals compared as decimals. */
const byTotal = (series) => [...series].sort((x, y) => compareDecimal(y.total, x.total))

/** The number of events behind the measure in the range (raw events counted; the meter's filters applied). */
async function eventCount(api, q) {
  const m = q.measure
  const body = {
    event_name: m.kind === 'event' ? m.eventName : m.meter.event_name,
    aggregation_type: 'COUNT',
    ...(m.kind === 'meter' && m.meter.filters?.length ? { filters: filtersOf(m.meter) } : {}),
    ...rangeBody({ ...q, windowSize: undefined }),
  }
  return (await api.post('/v1/events/usage', body)).value
}

/**
 * What the same selection cost you and its margin (POST /v1/costs/analytics, priced by the active cost sheet):
 * {cost, margin, percent} as text, or null without a cost sheet or when it cannot be priced (shown as absent).
 */
async function costsOf(api, body) {
  const answer = await api.post('/v1/costs/analytics', body).catch(() => null)
  if (!answer?.costsheet_id) return null
  const money = (amount) => `${amount} ${answer.currency}`.trim()
  return { cost: money(answer.total_cost), margin: money(answer.margin), percent: answer.margin_percent }
}

/** A feature's usage from the analytics endpoint: one series per group, every window of the range. */
async function analyticsUsage(api, q) {
  const body = {
    feature_ids: [q.measure.featureId],
    ...rangeBody(q),
    ...(q.groupBy ? { group_by: [`properties.${q.groupBy}`] } : {}),
    limit: 1000,
  }
  const [answer, margins] = await Promise.all([api.post('/v1/events/analytics', body), costsOf(api, body)])
  if (answer.items.length === 0) return undefined
  const windows = answer.items[0].points.map((p) => Date.parse(p.timestamp))
  const series = answer.items.map((item) => {
    const value = q.groupBy ? item.properties[q.groupBy] : null
    return { name: q.groupBy ? (value === null ? '(none)' : value) : q.measure.meter.name, values: item.points.map((p) => Number(p.usage)), total: item.total_usage }
  })
  return {
    windows,
    series: byTotal(series),
    total: answer.items.length === 1 ? answer.items[0].total_usage : sumDecimal(answer.items.map((i) => i.total_usage)),
    events: sumDecimal(answer.items.map((i) => i.event_count)),
    cost: answer.currency ? `${answer.total_cost} ${answer.currency}` : null,
    margins,
    unit: answer.items[0].aggregation_type,
    request: { path: '/v1/events/analytics', body },
  }
}

/**
 * Loads the chart's data. `events` is a decimal string, or an ApiError when counting failed (shown as
 * such, the chart still drawn); `cost` is null without a feature (or without a priced subscription).
 * A feature without usage in the range reads its meter's windows, so the chart still shows the range.
 */
export async function loadUsage(api, q) {
  if (q.measure.kind === 'meter' && q.measure.featureId) {
    const fromAnalytics = await analyticsUsage(api, q)
    if (fromAnalytics) return fromAnalytics
  }
  const [path, body] = usageRequest(q)
  const [answer, events] = await Promise.all([api.post(path, body), eventCount(api, q).catch((err) => err)])
  const label = q.measure.kind === 'event' ? `${q.measure.eventName} (events)` : q.measure.meter.name
  const { windows, series } = toSeries(answer, label, Boolean(q.groupBy))
  return { windows, series, total: answer.value, events, cost: null, unit: answer.type, request: { path, body } }
}

/** The CSV export of the same selection (POST /v1/events/analytics/export). A meter is named by a feature using it. */
export function exportRequest(q) {
  return [
    '/v1/events/analytics/export',
    {
      ...(q.customer ? { external_customer_id: q.customer } : {}),
      ...(q.measure.featureId ? { feature_ids: [q.measure.featureId] } : {}),
      start_time: q.start.toISOString(),
      end_time: q.end.toISOString(),
      window_size: q.windowSize,
      ...(q.groupBy ? { group_by: [`properties.${q.groupBy}`] } : {}),
      format: 'csv',
    },
  ]
}
