// Line items are snapshots of prices: the billing terms a subscription bills from, kept as they were
// when the line was made, with the quantity (fixed prices) and the span it is in force.
import { D, type Decimal } from '../../core/money.ts'
import type { PriceRow } from '../catalog/prices/service.ts'
import { toWire } from '../records/wire.ts'
import type { LineItemRow } from './store.ts'

const TERMS = [
  'type',
  'billing_model',
  'billing_cadence',
  'billing_period',
  'billing_period_count',
  'invoice_cadence',
  'amount',
  'tier_mode',
  'tiers',
  'transform_quantity',
  'min_quantity',
  'price_unit_type',
  'price_unit',
  'price_unit_id',
  'price_unit_amount',
  'price_unit_tiers',
  'conversion_rate',
] as const

export interface LineOwner {
  entity_type: 'plan' | 'addon'
  entity_id: string
  name: string
}

export interface LineSpan {
  start_date: Date
  end_date: Date | null
  subscription_phase_id?: string
  addon_association_id?: string
  quantity?: Decimal
}

/** The fields of a new line item for `price`; usage lines have quantity 0 (usage is measured), fixed ones 1 unless given. */
export function lineItemFields(sub: { id: string; customer_id: string }, owner: LineOwner, price: PriceRow, span: LineSpan) {
  const terms = Object.fromEntries(TERMS.map((k) => [k, price[k]]))
  return {
    subscription_id: sub.id,
    customer_id: sub.customer_id,
    subscription_phase_id: span.subscription_phase_id ?? null,
    addon_association_id: span.addon_association_id ?? null,
    entity_type: owner.entity_type,
    entity_id: owner.entity_id,
    plan_display_name: owner.name,
    display_name: price.display_name ?? owner.name,
    price_id: price.id,
    price: toWire(terms),
    price_type: price.type,
    meter_id: price.meter_id,
    currency: price.currency,
    quantity: price.type === 'FIXED' ? (span.quantity ?? new D(1)) : new D(0),
    billing_period: price.billing_period,
    billing_period_count: price.billing_period_count,
    invoice_cadence: price.invoice_cadence,
    trial_period_days: price.trial_period_days,
    start_date: span.start_date,
    end_date: span.end_date,
  }
}

/** A line that takes over from `line` with other terms: its own fields, without the record columns. */
export function successor(line: LineItemRow, changes: { quantity: Decimal; start_date: Date }) {
  const { id: _id, version: _v, status: _s, tenant_id: _t, environment_id: _e, created_at: _ca, created_by: _cb, updated_at: _ua, updated_by: _ub, ...own } = line
  return { ...own, ...changes }
}
