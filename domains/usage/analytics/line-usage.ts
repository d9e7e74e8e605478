// What an invoice's usage line billed, broken down: a meter's usage and event count for one customer over the line's
// window, per event source (from the breakdown rollups) and per value of the meter's group_by property (raw rows:
// no rollup has a property dimension). Every page is read: a line has few sources and groups.
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { analyticsRead } from '../queries/service.ts'
import { propertyBreakdown, usageBreakdown, type BreakdownGroup, type PropertyBreakdownQuery } from './store.ts'

export interface LineUsageQuery {
  meterId: string
  externalCustomerId: string
  start: Date
  end: Date
}

export interface LineUsage {
  /** Per source ('' for events sent without one), in source order. */
  bySource: BreakdownGroup[]
  /** Per value of the meter's group_by property (its text; null where an event has none); absent without group_by. */
  byGroup?: { value: string | null; group: BreakdownGroup }[]
}

const PAGE = 1000

async function allGroups(read: (offset: number) => Promise<{ groups: BreakdownGroup[]; total: number }>): Promise<BreakdownGroup[]> {
  const groups: BreakdownGroup[] = []
  for (let offset = 0; ; offset += PAGE) {
    const page = await read(offset)
    groups.push(...page.groups)
    if (offset + PAGE >= page.total) return groups
  }
}

/** The line's usage by source and by group, over the window it billed (a reset_usage NEVER meter: from the beginning). */
export async function lineUsage(deps: Deps, scope: Scope, q: LineUsageQuery): Promise<LineUsage> {
  const { meter, groupBy, start, end } = await analyticsRead(deps, scope, { meterId: q.meterId, start: q.start, end: q.end, billed: true })
  const base: PropertyBreakdownQuery = { scope, meters: [meter], externalCustomerIds: [q.externalCustomerId], start, end, limit: PAGE }
  const bySource = await allGroups((offset) => usageBreakdown(deps.ch, { ...base, groupBy: ['source'], offset }))
  if (!groupBy) return { bySource }
  const key = `properties.${groupBy}`
  const groups = await allGroups((offset) => propertyBreakdown(deps.ch, { ...base, groupBy: [key], offset }))
  return { bySource, byGroup: groups.map((group) => ({ value: group.properties?.[groupBy] ?? null, group })) }
}
