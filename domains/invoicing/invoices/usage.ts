// usage_analytics and usage_breakdown of an invoice's usage lines (GET /v1/invoices/{id}?expand=...), read from the
// usage analytics over the window the line billed: per event source (usage_analytics) and per value of the meter's
// group_by property (usage_breakdown), each with its usage, event count, share of the usage and cost. Costs are the
// line's amount split by usage with allocateByUsage (largest remainder), so each list adds up to the line to the cent.
import { allocateByUsage } from '../../../core/analytics/allocation.ts'
import { D, sumMoney } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { customerViews } from '../../customers/service.ts'
import { lineUsage } from '../../usage/analytics/line-usage.ts'
import type { BreakdownGroup } from '../../usage/analytics/store.ts'
import type { InvoiceView } from './read.ts'

type Line = InvoiceView['line_items'][number]

/** Each group's usage, event count, percentage of the groups' usage (2 places) and cost; none when nothing was used. */
function shares(line: Line, groups: readonly BreakdownGroup[]) {
  const usages = groups.map((g) => new D(g.usage))
  const total = sumMoney(usages)
  const costs = groups.length > 0 ? allocateByUsage(line.amount, usages, line.currency) : []
  return groups.map((g, i) => ({
    usage: usages[i],
    // A count: an integer on the wire (the spec's usage_analytics[].event_count), as the analytics endpoint answers it.
    event_count: Number(g.eventCount),
    cost: costs[i],
    percentage: total.isZero() ? new D(0) : usages[i].times(100).div(total).toDecimalPlaces(2),
  }))
}

export async function expandUsage(deps: Deps, scope: Scope, invoice: InvoiceView, expand: string[]): Promise<InvoiceView> {
  if (expand.length === 0) return invoice
  const customers = new Map((await customerViews(deps.sql, scope, invoice.line_items.map((l) => l.customer_id))).map((c) => [c.id, c]))
  const lines = []
  for (const line of invoice.line_items) {
    const calc = line.calculation as { usage_start?: string; usage_end?: string } | null
    if (line.price_type !== 'USAGE' || !line.meter_id || !calc?.usage_start || !calc.usage_end || calc.usage_start >= calc.usage_end) {
      lines.push(line)
      continue
    }
    const usage = await lineUsage(deps, scope, { meterId: line.meter_id, externalCustomerId: customers.get(line.customer_id)!.external_id, start: new Date(calc.usage_start), end: new Date(calc.usage_end) })
    const extra: Record<string, unknown> = {}
    if (expand.includes('usage_analytics')) {
      const bySource = shares(line, usage.bySource)
      extra.usage_analytics = usage.bySource.map((g, i) => ({ source: g.source ?? '', ...bySource[i] }))
    }
    if (expand.includes('usage_breakdown')) {
      const groups = usage.byGroup ?? []
      const byGroup = shares(line, groups.map((g) => g.group))
      const property = Object.keys(groups[0]?.group.properties ?? {})[0]
      extra.usage_breakdown = groups.map((g, i) => ({ grouped_by: { [property]: g.value }, ...byGroup[i] }))
    }
    lines.push({ ...line, ...extra })
  }
  return { ...invoice, line_items: lines }
}
