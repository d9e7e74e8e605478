// The cost analytics as CSV (POST /v1/costs/analytics/export): one row per customer, feature, group (source,
// property values) and window with usage, revenue or cost: its usage, revenue, cost, margin and margin percent.
// Each customer's rows are its cost analytics (analytics.ts, the same numbers the JSON answer gives for that
// customer), so a customer's rows add up to its answer; customers come one at a time, so memory holds one
// customer's groups. Written through core/csv.ts and streamed by the analytics export's sendCsv.
import { csvPieces, type CsvColumn, type CsvPiece, type CsvValue } from '../../core/csv.ts'
import { AppError } from '../../core/errors.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { breakdownKeys, resolveRequest, type AnalyticsRequest } from '../analytics/service.ts'
import { groupColumns } from '../analytics/export.ts'
import { findCustomerByExternalId, type CustomerRow } from '../customers/service.ts'
import { customersWithUsage } from '../usage/analytics/store.ts'
import { costAnalytics, type CostAnalytics } from './analytics.ts'

const NUMBER = 'number' as const

export interface CostExport {
  filename: string
  columns: CsvColumn[]
  pieces(signal: AbortSignal): AsyncIterable<CsvPiece>
}

/** Groups of one customer read a page at a time (the analytics' largest page). */
const PAGE = 1000

/** A customer's cost analytics, every page; undefined for usage of an external id without a customer record. */
async function customerAnalytics(deps: Deps, actor: Actor, r: AnalyticsRequest, externalId: string): Promise<CostAnalytics[] | undefined> {
  const pages: CostAnalytics[] = []
  try {
    for (let offset = 0; offset === 0 || offset < pages[0].pagination.total; offset += PAGE) pages.push(await costAnalytics(deps, actor, { ...r, externalCustomerId: externalId, limit: PAGE, offset }))
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found' && pages.length === 0) return undefined
    throw err
  }
  return pages
}

export function costExport(deps: Deps, actor: Actor, r: AnalyticsRequest): CostExport {
  const keys = breakdownKeys(r.groupBy)
  const properties = keys.filter((k) => k.startsWith('properties.'))
  const columns: CsvColumn[] = [
    ...groupColumns(keys),
    { name: 'event_count', kind: NUMBER },
    { name: 'usage', kind: NUMBER },
    { name: 'revenue', kind: NUMBER },
    { name: 'cost', kind: NUMBER },
    { name: 'margin', kind: NUMBER },
    { name: 'margin_percent', kind: NUMBER },
    { name: 'currency' },
  ]
  async function* rows(signal: AbortSignal): AsyncGenerator<CsvValue[]> {
    const resolved = await resolveRequest(deps, actor, r)
    if (resolved.meters.length === 0) return
    const customers = r.externalCustomerId !== undefined ? [r.externalCustomerId] : await customersWithUsage(deps.ch, resolved.query)
    for (const externalId of customers) {
      if (signal.aborted) return
      const pages = await customerAnalytics(deps, actor, r, externalId)
      if (!pages) continue
      const customer: CustomerRow = await findCustomerByExternalId(deps, actor, externalId)
      const head = (at: Date) => [at.toISOString(), customer.id, customer.external_id, customer.name]
      for (const answer of pages) {
        for (const item of answer.items) {
          const u = item.usage
          const group = [u.meter.id, u.meter.name, u.feature.id, u.feature.name, u.source, ...properties.map((k) => u.group[k] ?? null)]
          if (!item.points) {
            yield [...head(r.start), ...group, u.eventCount, u.totalUsage, item.revenue, item.cost, item.margins.margin, item.margins.margin_percent, answer.currency]
            continue
          }
          for (const p of item.points) {
            if (p.eventCount === 0 && p.revenue.isZero() && p.cost.isZero()) continue
            yield [...head(p.timestamp), ...group, p.eventCount, p.quantity, p.revenue, p.cost, p.margins.margin, p.margins.margin_percent, answer.currency]
          }
        }
      }
    }
  }
  return {
    filename: `costs-${r.start.toISOString()}-${r.end.toISOString()}.csv`.replace(/:/g, ''),
    columns,
    pieces: (signal) => csvPieces(columns, rows(signal)),
  }
}
