// Usage of many customers at once for a billing run. A run over thousands of subscriptions asks the
// same meter and window for every customer, so it asks the usage service once per meter and window
// for all of them (meterUsageByCustomer: the same numbers as the single-customer usage query). Both
// read the billed quantity: a meter whose usage never resets counts everything up to the window's end.
import { D, type Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { meterUsage, meterUsageByCustomer } from '../../usage/queries/service.ts'

export interface UsageRequest {
  meterId: string
  externalCustomerId: string
  start: Date
  end: Date
}

export type UsageReader = (r: UsageRequest) => Promise<Decimal>

/** One customer's usage through the usage service. */
export const serviceUsage = (deps: Deps, scope: Scope): UsageReader => async (r) =>
  new D((await meterUsage(deps, scope, { meterId: r.meterId, externalCustomerId: r.externalCustomerId, start: r.start, end: r.end, billed: true })).value.toString())

const keyOf = (r: UsageRequest) => `${r.meterId}|${r.start.getTime()}|${r.end.getTime()}`

/** Reads every request's usage, a meter and window at a time; the reader answers them and falls back to the service. */
export async function prefetchUsage(deps: Deps, scope: Scope, requests: UsageRequest[]): Promise<UsageReader> {
  const fallback = serviceUsage(deps, scope)
  const groups = new Map<string, UsageRequest[]>()
  for (const r of requests) groups.set(keyOf(r), [...(groups.get(keyOf(r)) ?? []), r])
  const known = new Map<string, Decimal>()
  for (const [key, group] of groups) {
    const { meterId, start, end } = group[0]
    const customers = [...new Set(group.map((r) => r.externalCustomerId))]
    const results = await meterUsageByCustomer(deps, scope, { meterId, externalCustomerIds: customers, start, end, billed: true })
    for (const c of customers) {
      const result = results.get(c)
      if (result) known.set(`${key}|${c}`, new D(result.value.toString()))
    }
  }
  return async (r) => known.get(`${keyOf(r)}|${r.externalCustomerId}`) ?? fallback(r)
}
