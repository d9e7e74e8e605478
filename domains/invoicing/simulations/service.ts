// Pricing simulations (backtesting a price list on past usage): asked for, read with their progress and totals,
// their customers a page at a time, and the same as CSV rows. The run itself is in run.ts: it starts in the
// process that was asked, at once, and the worker's job takes over one whose process stopped.
import { AppError, invalidOperation, notFound, validationError } from '../../../core/errors.ts'
import type { CsvColumn, CsvValue } from '../../../core/csv.ts'
import { differencePercent } from '../../../core/billing/simulation.ts'
import { newId } from '../../../core/ids.ts'
import { D, type Decimal } from '../../../core/money.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { customerViews } from '../../customers/service.ts'
import { prepareCandidate, type CandidateInput } from './candidate.ts'
import { runSimulation } from './run.ts'
import * as store from './store.ts'

export type { CustomerSort } from './store.ts'

export interface CreateSimulationInput {
  name: string
  start_time: Date
  end_time: Date
  customer_ids?: string[]
  candidate: CandidateInput
}

/** A simulation as answered. */
export function simulationView(row: store.SimulationRow) {
  const total = row.total ?? null
  return {
    id: row.id,
    name: row.name,
    start_time: row.start_time,
    end_time: row.end_time,
    customer_ids: row.customer_ids,
    candidate: row.candidate,
    currency: row.currency,
    status: row.sim_status,
    progress: {
      processed_subscriptions: row.processed,
      total_subscriptions: total,
      percent: row.sim_status === 'completed' ? 100 : total ? Math.floor((row.processed * 100) / total) : 0,
    },
    totals: row.totals,
    distribution: row.distribution,
    error: row.error,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  }
}

/** Runs in this process, not awaited by the request: a failure is recorded on the simulation, never thrown here. */
function start(deps: Deps, id: string): void {
  runSimulation(deps, id).catch((err) => deps.logger.error({ err, simulation_id: id }, 'pricing simulation could not record its outcome'))
}

export async function createSimulation(deps: Deps, actor: Actor, input: CreateSimulationInput): Promise<ReturnType<typeof simulationView>> {
  if (input.end_time <= input.start_time) throw validationError('end_time', 'must be after start_time')
  const candidate = await prepareCandidate(deps.sql, actor, input.candidate)
  if (input.customer_ids) {
    const found = new Set((await customerViews(deps.sql, actor, input.customer_ids)).map((c) => c.id))
    const missing = input.customer_ids.findIndex((id) => !found.has(id))
    if (missing >= 0) throw new AppError('not_found', `customer_ids[${missing}]: customer ${input.customer_ids[missing]} not found`, { id: input.customer_ids[missing], [`customer_ids[${missing}]`]: input.customer_ids[missing] })
  }
  const row = await store.insertSimulation(deps.sql, {
    id: newId('sim'),
    tenant_id: actor.tenantId,
    environment_id: actor.environmentId,
    name: input.name,
    start_time: input.start_time,
    end_time: input.end_time,
    customer_ids: input.customer_ids ? [...new Set(input.customer_ids)] : null,
    candidate: input.candidate as unknown as Record<string, unknown>,
    currency: candidate.currency,
    created_at: deps.clock.now(),
    created_by: actor.keyId,
  })
  start(deps, row.id)
  return simulationView(row)
}

async function requireSimulation(deps: Deps, actor: Actor, id: string): Promise<store.SimulationRow> {
  const row = await store.findSimulation(deps.sql, actor, id)
  if (!row) throw notFound('pricing simulation', id)
  return row
}

export const getSimulation = async (deps: Deps, actor: Actor, id: string) => simulationView(await requireSimulation(deps, actor, id))

/** A customer's result: its subscriptions' lines added up by price. */
function customerView(c: store.CustomerResult) {
  const byPrice = new Map<string | null, { price_id: string | null; current: Decimal; candidate: Decimal }>()
  for (const l of c.lines.flat()) {
    const line = byPrice.get(l.price_id) ?? { price_id: l.price_id, current: new D(0), candidate: new D(0) }
    line.current = line.current.plus(l.current)
    line.candidate = line.candidate.plus(l.candidate)
    byPrice.set(l.price_id, line)
  }
  return {
    customer_id: c.customer_id,
    current: c.current,
    candidate: c.candidate,
    difference: c.candidate.minus(c.current),
    difference_percent: differencePercent(c.current, c.candidate),
    invoices: c.invoices,
    lines: [...byPrice.values()].map((l) => ({ ...l, difference: l.candidate.minus(l.current) })),
  }
}

/** Customers' results once the simulation completed (a running one has only some of them). */
async function completed(deps: Deps, actor: Actor, id: string): Promise<store.SimulationRow> {
  const row = await requireSimulation(deps, actor, id)
  if (row.sim_status !== 'completed') throw invalidOperation(`the simulation is ${row.sim_status}; its customers are read once it is completed`, { status: row.sim_status })
  return row
}

export async function simulationCustomers(deps: Deps, actor: Actor, id: string, p: { sort: store.CustomerSort; order: 'asc' | 'desc'; limit: number; offset: number }) {
  await completed(deps, actor, id)
  const { items, total } = await store.customerPage(deps.sql, id, p)
  return { items: items.map(customerView), pagination: { limit: p.limit, offset: p.offset, total } }
}

export const EXPORT_COLUMNS: readonly CsvColumn[] = [
  { name: 'customer_id' },
  { name: 'price_id' },
  { name: 'current', kind: 'number' },
  { name: 'candidate', kind: 'number' },
  { name: 'difference', kind: 'number' },
  { name: 'difference_percent', kind: 'number' },
  { name: 'invoices', kind: 'number' },
]

/**
 * The export's rows in customer id order: per customer a total row (price_id empty), then one row per price.
 * Read a page of customers at a time.
 */
export async function* exportRows(deps: Deps, id: string): AsyncGenerator<readonly CsvValue[]> {
  for (let after = ''; ; ) {
    const page = await store.customersAfter(deps.sql, id, after, 500, { lines: true })
    if (page.length === 0) return
    after = page[page.length - 1].customer_id
    for (const c of page.map(customerView)) {
      yield [c.customer_id, '', c.current, c.candidate, c.difference, c.difference_percent, c.invoices]
      for (const l of c.lines) yield [c.customer_id, l.price_id ?? 'commitment_true_up', l.current, l.candidate, l.difference, differencePercent(l.current, l.candidate), null]
    }
  }
}

/** Checks the simulation is the caller's and completed before its export starts. */
export const exportable = (deps: Deps, actor: Actor, id: string) => completed(deps, actor, id)
