// Pricing simulations: POST /v1/pricing/simulations runs a candidate price list over past usage; GET reads its
// progress, totals and distribution, its customers a page at a time, and the same as CSV.
import type { JsonSchema } from '../../core/validate.ts'
import { toWire } from '../../domains/records/wire.ts'
import { createSimulation, EXPORT_COLUMNS, exportable, exportRows, getSimulation, simulationCustomers, type CreateSimulationInput, type CustomerSort } from '../../domains/invoicing/simulations/service.ts'
import type { CandidateInput } from '../../domains/invoicing/simulations/candidate.ts'
import { csvPieces } from '../../core/csv.ts'
import { sendCsv } from '../csv-stream.ts'
import { dateTime, idList } from '../record-schema.ts'
import { defineRoute, type Route } from '../route.ts'
import { priceSchema } from './prices.ts'

interface SimulationBody {
  name: string
  start_time: string
  end_time: string
  customer_ids?: string[]
  candidate: CandidateInput
}

const price = priceSchema.properties as Record<string, JsonSchema>

const override: JsonSchema = {
  type: 'object',
  required: ['price_id'],
  additionalProperties: false,
  properties: {
    price_id: { type: 'string', minLength: 1 },
    billing_model: price.billing_model,
    amount: price.amount,
    tier_mode: price.tier_mode,
    tiers: price.tiers,
    transform_quantity: price.transform_quantity,
    min_quantity: { anyOf: [price.min_quantity, { type: 'null' }] },
    allowance: { type: ['integer', 'null'], minimum: 0, description: 'units free each period before the price applies (the entitlement usage_limit); null: none' },
  },
}

const candidate: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'exactly one of price_overrides and plan_id',
  minProperties: 1,
  maxProperties: 1,
  properties: {
    price_overrides: { type: 'array', minItems: 1, maxItems: 1000, items: override },
    plan_id: { type: 'string', minLength: 1 },
  },
}

const SORTS: readonly CustomerSort[] = ['abs_difference', 'difference', 'difference_percent', 'customer_id']

const toInput = (b: SimulationBody): CreateSimulationInput => ({
  name: b.name,
  start_time: new Date(b.start_time),
  end_time: new Date(b.end_time),
  customer_ids: b.customer_ids,
  candidate: b.candidate,
})

export const simulationRoutes: Route[] = [
  defineRoute<SimulationBody>({
    method: 'POST',
    path: '/v1/pricing/simulations',
    tag: 'Pricing',
    summary: "Simulates a candidate price list (price overrides or a plan) on the billing points dated in [start_time, end_time): each customer's invoices as billed today and with the candidate, over the same stored usage; runs as a job",
    permission: 'write',
    status: 202,
    body: {
      type: 'object',
      required: ['name', 'start_time', 'end_time', 'candidate'],
      additionalProperties: false,
      properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, start_time: dateTime, end_time: dateTime, customer_ids: { ...idList, minItems: 1 }, candidate },
    },
    handler: async ({ deps, actor, body }) => toWire(await createSimulation(deps, actor, toInput(body))),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/pricing/simulations/{id}',
    tag: 'Pricing',
    summary: 'A simulation: status, progress, totals (current, candidate, difference, difference_percent) and the distribution of customers by difference',
    permission: 'read',
    readsUsage: false,
    handler: async ({ deps, actor, params }) => toWire(await getSimulation(deps, actor, params.id)),
  }),
  defineRoute<Record<string, never>, { limit: number; offset: number; sort: CustomerSort; order: 'asc' | 'desc' }>({
    method: 'GET',
    path: '/v1/pricing/simulations/{id}/customers',
    tag: 'Pricing',
    summary: "A completed simulation's customers, a page at a time: current, candidate, difference and the amounts by price; sorted by the size of the change by default (the top movers)",
    permission: 'read',
    readsUsage: false,
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
        offset: { type: 'integer', minimum: 0, default: 0 },
        sort: { type: 'string', enum: [...SORTS], default: SORTS[0] },
        order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
      },
    },
    handler: async ({ deps, actor, params, query }) => toWire(await simulationCustomers(deps, actor, params.id, query)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/pricing/simulations/{id}/export',
    tag: 'Pricing',
    summary: "A completed simulation's customers as CSV, streamed: a total row per customer (price_id empty), then one row per price",
    permission: 'read',
    readsUsage: false,
    produces: 'text/csv',
    handler: async ({ deps, actor, params, ctx }) => {
      const sim = await exportable(deps, actor, params.id)
      await sendCsv(ctx, deps, { filename: `simulation-${sim.id}.csv`, columns: EXPORT_COLUMNS, pieces: () => csvPieces(EXPORT_COLUMNS, exportRows(deps, sim.id)) })
      return undefined
    },
  }),
]
