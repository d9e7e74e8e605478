// The usage reconciliation report (GET /v1/customers/{id}/usage/reconciliation): per meter, a customer's events of a
// range as received, stored, dropped as duplicates, rejected, corrected, counted by the meter, billed on finalized
// invoices, adjusted since by the usage-adjustments job, and unsettled (counted now in billed windows but neither billed
// nor adjusted: late events and corrections the job has not settled yet), so a
// finance team can show every event counted once and billed once. How each number is obtained: docs/analytics.md.
import { validationError } from '../../../core/errors.ts'
import { D } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { metersByIds, queryRules, listMeters, type Meter } from '../../catalog/meters/service.ts'
import { requireCustomer } from '../../customers/service.ts'
import { billedEvents, eventOutcomes } from '../../usage/analytics/reconciliation.ts'
import { usageBreakdown, type AnalyticsMeter } from '../../usage/analytics/store.ts'
import { billedLines, type BilledLineRow } from './store.ts'

export interface ReconciliationQuery {
  start_time?: string
  end_time?: string
  meter_ids?: string[]
}

const LIST_ALL = { limit: 1000, offset: 0, sort: 'created_at', order: 'asc' as const, status: 'published' as const, metadata: {} }

const analyticsMeter = (m: Meter): AnalyticsMeter => ({ meterId: m.id, revision: m.ready_revision, eventName: m.event_name, aggregation: queryRules(m).aggregation })

/** The meters asked for; else every meter of an event name the customer has events of, and every meter billed. */
async function metersOf(deps: Deps, scope: Scope, q: ReconciliationQuery, eventNames: string[], lines: BilledLineRow[]): Promise<Meter[]> {
  if (q.meter_ids) {
    const found = await metersByIds(deps, scope, q.meter_ids)
    const missing = q.meter_ids.find((id) => !found.some((m) => m.id === id))
    if (missing) throw validationError('meter_ids', `no meter ${missing}`)
    return found
  }
  const byName = await Promise.all(eventNames.map(async (name) => (await listMeters(deps, scope, LIST_ALL, name)).items))
  const billed = await metersByIds(deps, scope, [...new Set(lines.map((l) => l.meter_id))])
  const all = new Map([...byName.flat(), ...billed].map((m) => [m.id, m]))
  return [...all.values()].sort((a, b) => a.event_name.localeCompare(b.event_name) || a.id.localeCompare(b.id))
}

export async function usageReconciliation(deps: Deps, scope: Scope, customerId: string, q: ReconciliationQuery) {
  const customer = await requireCustomer(deps, scope, customerId)
  for (const field of ['start_time', 'end_time'] as const) if (q[field] === undefined) throw validationError(field, 'is required')
  const start = new Date(q.start_time!)
  const end = new Date(q.end_time!)
  if (end <= start) throw validationError('end_time', 'must be after start_time')
  const range = { scope, externalCustomerId: customer.external_id, start, end }
  const [outcomes, lines] = await Promise.all([eventOutcomes(deps.ch, range), billedLines(deps.sql, scope, customer.id, start, end)])
  const meters = await metersOf(deps, scope, q, [...outcomes.keys()], lines)
  // A meter still counting its first backfill has nothing to read yet: its counted and billed stay null.
  const ready = meters.filter((m) => m.ready_revision > 0)
  const counted = new Map<string, string>()
  if (ready.length > 0) {
    const { groups } = await usageBreakdown(deps.ch, { ...range, externalCustomerIds: [customer.external_id], meters: ready.map(analyticsMeter), limit: 1000 })
    for (const g of groups) counted.set(g.meterId, g.eventCount)
  }
  const items = await Promise.all(
    meters.map(async (m) => {
      const o = outcomes.get(m.event_name) ?? { stored: 0, duplicates: 0, rejected: 0, corrected: 0 }
      const own = lines.filter((l) => l.meter_id === m.id)
      // Each line's window, cut to the range.
      const windows = own.map((l) => ({ start: new Date(Math.max(l.usage_start.getTime(), start.getTime())), end: new Date(Math.min(l.usage_end.getTime(), end.getTime())), finalizedAt: l.finalized_at, settledAt: l.settled_at }))
      const isReady = m.ready_revision > 0
      const billed = isReady ? await billedEvents(deps.ch, { scope, externalCustomerId: customer.external_id, meter: analyticsMeter(m), windows }) : null
      return {
        meter_id: m.id,
        meter_name: m.name,
        event_name: m.event_name,
        received: o.stored + o.duplicates + o.rejected,
        stored: o.stored,
        duplicates: o.duplicates,
        rejected: o.rejected,
        corrected: o.corrected,
        counted: isReady ? Number(counted.get(m.id) ?? 0) : null,
        billed: billed?.billed ?? null,
        adjusted: billed ? billed.settled - billed.billed : null,
        unsettled: billed ? billed.current - billed.settled : null,
        billed_quantity: own.reduce((a, l) => a.plus(l.quantity), new D(0)),
        invoices: own.map((l) => ({ invoice_id: l.invoice_id, line_item_id: l.line_item_id, usage_start: l.usage_start, usage_end: l.usage_end, quantity: new D(l.quantity), finalized_at: l.finalized_at })),
      }
    }),
  )
  return { customer_id: customer.id, external_customer_id: customer.external_id, start_time: start, end_time: end, meters: items }
}
