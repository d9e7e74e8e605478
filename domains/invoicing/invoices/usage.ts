// usage_analytics and usage_breakdown of an invoice's usage lines (GET /v1/invoices/{id}?expand=...),
// read from the usage service over the window the line billed. Costs are the line's amount split in
// proportion to usage with the engine's allocate, so the parts add up to the line to the cent.
import { allocate } from '../../../core/billing/amounts.ts'
import { D, sumMoney, type Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { customerViews } from '../../customers/service.ts'
import { meterUsage } from '../../usage/queries/service.ts'
import type { InvoiceView } from './read.ts'

const share = (part: Decimal, whole: Decimal): Decimal => (whole.isZero() ? new D(0) : part.times(100).div(whole).toDecimalPlaces(2))

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
    const usage = await meterUsage(deps, scope, { meterId: line.meter_id, externalCustomerId: customers.get(line.customer_id)!.external_id, start: new Date(calc.usage_start), end: new Date(calc.usage_end), billed: true })
    const total = new D(usage.value.toString())
    const extra: Record<string, unknown> = {}
    if (expand.includes('usage_analytics')) extra.usage_analytics = [{ source: null, usage: total, cost: line.amount, percentage: new D(100), event_count: null }]
    if (expand.includes('usage_breakdown')) {
      const groups = new Map<string, Decimal>()
      for (const w of usage.results) for (const [g, v] of w.groups) groups.set(g, (groups.get(g) ?? new D(0)).plus(v.toString()))
      const keys = [...groups.keys()]
      const values = keys.map((k) => groups.get(k)!)
      const costs = keys.length > 0 && sumMoney(values).gt(0) ? allocate(line.amount, values, line.currency) : values.map(() => new D(0))
      extra.usage_breakdown = keys.map((k, i) => ({ grouped_by: { group: k }, usage: values[i], cost: costs[i], percentage: share(values[i], total), event_count: null }))
    }
    lines.push({ ...line, ...extra })
  }
  return { ...invoice, line_items: lines }
}
