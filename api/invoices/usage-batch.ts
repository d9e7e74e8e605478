// Usage of many customers at once for a billing run. The usage service answers one customer and window
// per query (POST /v1/events/usage/meter); a run over thousands of subscriptions asks the same meter and
// window for every customer, so for additive meters (COUNT, SUM, SUM_WITH_MULTIPLIER: a total is the sum
// of its rows) it reads the exact meter_usage rows of the meter's ready revision (from the meter
// service) once per meter and window, grouped by customer. Every other meter, and anything not fetched,
// is read through meterUsage. billing-run.test.ts checks both give the same numbers.
// (A per-customer read belongs in the usage service; this moves there once it offers one.)
import { D, type Decimal } from '../../core/money.ts'
import type { Scope } from '../../core/scope.ts'
import { chDateTime } from '../../infra/clickhouse.ts'
import type { Deps } from '../../infra/deps.ts'
import { getMeter, queryRules } from '../meters/service.ts'
import { meterUsage } from '../usage/service.ts'

export interface UsageRequest {
  meterId: string
  externalCustomerId: string
  start: Date
  end: Date
}

export type UsageReader = (r: UsageRequest) => Promise<Decimal>

/** One customer's usage through the usage service. */
export const serviceUsage = (deps: Deps, scope: Scope): UsageReader => async (r) =>
  new D((await meterUsage(deps, scope, { meterId: r.meterId, externalCustomerId: r.externalCustomerId, start: r.start, end: r.end })).value.toString())

const keyOf = (r: UsageRequest) => `${r.meterId}|${r.start.getTime()}|${r.end.getTime()}`

/** Reads every request's usage, a meter and window at a time; the reader answers them and falls back to the service. */
export async function prefetchUsage(deps: Deps, scope: Scope, requests: UsageRequest[]): Promise<UsageReader> {
  const fallback = serviceUsage(deps, scope)
  const groups = new Map<string, UsageRequest[]>()
  for (const r of requests) groups.set(keyOf(r), [...(groups.get(keyOf(r)) ?? []), r])
  const known = new Map<string, Decimal>()
  for (const [key, group] of groups) {
    const meter = await getMeter(deps, scope, group[0].meterId)
    const rules = queryRules(meter)
    const type = rules.aggregation.type
    if (meter.ready_revision === 0 || (type !== 'COUNT' && type !== 'SUM' && type !== 'SUM_WITH_MULTIPLIER')) continue
    const customers = [...new Set(group.map((r) => r.externalCustomerId))]
    const rs = await deps.ch.client.query({
      query: `SELECT external_customer_id AS customer, toString(count()) AS events, toString(sum(value)) AS total FROM meter_usage
        WHERE tenant_id = {t:String} AND environment_id = {e:String} AND meter_id = {m:String} AND revision = {rev:UInt32}
          AND external_customer_id IN {customers:Array(String)}
          AND timestamp >= {start:DateTime64(3, 'UTC')} AND timestamp < {end:DateTime64(3, 'UTC')}
        GROUP BY external_customer_id`,
      query_params: { t: scope.tenantId, e: scope.environmentId, m: meter.id, rev: rules.revision, customers, start: chDateTime(group[0].start), end: chDateTime(group[0].end) },
      format: 'JSONEachRow',
    })
    const rows = new Map((await rs.json<{ customer: string; events: string; total: string }>()).map((r) => [r.customer, r]))
    const multiplier = new D(rules.aggregation.multiplier ?? 1)
    for (const c of customers) {
      const row = rows.get(c)
      const value = !row ? new D(0) : type === 'COUNT' ? new D(row.events) : type === 'SUM' ? new D(row.total) : new D(row.total).times(multiplier)
      known.set(`${key}|${c}`, value)
    }
  }
  return async (r) => known.get(`${keyOf(r)}|${r.externalCustomerId}`) ?? fallback(r)
}
