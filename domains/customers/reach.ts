// Customers on a test clock live on its time, not the wall clock's. Two consequences meet here:
// - the scheduled jobs' selections: a run while a clock advances (deps.testClockId) touches that clock's
//   customers only, every other run leaves out every customer on a clock;
// - event intake: a clocked customer's events may be stamped up to the clock's time and no later, a
//   lookup made per event, so answered from memory (infra/read-cache.ts: at most READ_CACHE_MS stale
//   across processes, never across a write of this one).
import { fixedClock } from '../../core/clock.ts'
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Db } from '../../infra/postgres.ts'
import { ReadCache } from '../../infra/read-cache.ts'
import type { Fragment } from '../../infra/records.ts'

/** The SQL condition "the customer in `customerColumn` (qualified, e.g. "invoices.customer_id") is in this run's reach". */
export function inReach(db: Db, deps: Pick<Deps, 'testClockId'>, customerColumn: string): Fragment {
  const column = db(customerColumn)
  return deps.testClockId
    ? db`${column} IN (SELECT id FROM customers WHERE test_clock_id = ${deps.testClockId})`
    : db`NOT EXISTS (SELECT 1 FROM customers WHERE customers.id = ${column} AND customers.test_clock_id IS NOT NULL)`
}

/** Of `customerIds`, those in this run's reach (for selections made in code rather than SQL). */
export async function customersInReach(db: Db, deps: Pick<Deps, 'testClockId'>, customerIds: string[]): Promise<Set<string>> {
  if (customerIds.length === 0) return new Set()
  const rows = await db<{ id: string }[]>`SELECT id FROM unnest(${customerIds}::text[]) AS c(id) WHERE ${inReach(db, deps, 'c.id')}`
  return new Set(rows.map((r) => r.id))
}

/** Deps whose clock reads the time of the test clock the customer lives on, if any (what happens to it happens then). */
export async function onCustomersTime(deps: Deps, customer: { test_clock_id: string | null }): Promise<Deps> {
  if (!customer.test_clock_id) return deps
  const [row] = await deps.sql<{ frozen_time: Date }[]>`SELECT frozen_time FROM test_clocks WHERE id = ${customer.test_clock_id}`
  return row ? { ...deps, clock: fixedClock(row.frozen_time) } : deps
}

/** external_id → the clock's frozen time (ms), for one environment's customers on a clock. */
export type ClockedCustomers = ReadonlyMap<string, number>

const clocked = new ReadCache<ClockedCustomers>()

/** The environment's customers on a test clock and each clock's time (usually none: an empty map). */
export function clockedCustomers(deps: Deps, scope: Scope): Promise<ClockedCustomers> {
  return clocked.read(`${scope.tenantId}:${scope.environmentId}`, new Date(), async () => {
    const rows = await deps.sql<{ external_id: string; frozen_time: Date }[]>`SELECT c.external_id, t.frozen_time
      FROM customers c JOIN test_clocks t ON t.id = c.test_clock_id
      WHERE c.tenant_id = ${scope.tenantId} AND c.environment_id = ${scope.environmentId} AND c.test_clock_id IS NOT NULL AND c.status = 'published'`
    return new Map(rows.map((r) => [r.external_id, r.frozen_time.getTime()]))
  })
}
