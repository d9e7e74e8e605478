// Creates a parsed pricing configuration (POST /v1/ai/pricing/parse?apply=true) in one transaction:
// meters, then features, then plans with their prices and entitlements, each through the service its
// create endpoint calls (so every rule of those endpoints applies), with every ref replaced by the id it
// was created as. A feature whose lookup_key exists already is taken as it is, with its meter, and a meter
// counting the same events the same way is reused: applying two descriptions that share "API calls"
// gives one feature. Anything refused rolls the whole configuration back.
import { alreadyExists } from '../../../core/errors.ts'
import type { ListParams } from '../../../core/list.ts'
import { checkConfig, type PricingConfig } from '../../../core/pricing-parse/config.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { inTransaction, transaction, within } from '../../records/service.ts'
import { features, type FeatureRow } from '../features/service.ts'
import { createMeter, listMeters } from '../meters/service.ts'
import { PLAN } from '../offerings/kinds.ts'
import { createOffering, type OfferingView } from '../offerings/service.ts'

interface AppliedRecord {
  ref: string
  id: string
  /** false: an existing record was used. */
  created: boolean
}

export interface Applied {
  meters: AppliedRecord[]
  features: AppliedRecord[]
  plans: OfferingView[]
}

const page = (limit: number): ListParams => ({ limit, offset: 0, sort: 'created_at', order: 'asc', status: 'published', metadata: {} })

export async function applyPricing(deps: Deps, actor: Actor, config: PricingConfig): Promise<Applied> {
  checkConfig(config)
  return transaction(deps, async (tx) => {
    const d = inTransaction(deps, tx)
    const meterIds = new Map<string, string>()
    const featureIds = new Map<string, string>()
    const applied: Applied = { meters: [], features: [], plans: [] }
    // Features of the same lookup_key are taken as they are, and their meters with them.
    const existing = new Map<string, FeatureRow>()
    for (const [i, f] of config.features.entries()) {
      const [found] = (await features.list(d, actor, { params: page(1), filters: { lookup_key: f.lookup_key } })).items
      if (!found) continue
      if (found.type !== f.type) {
        throw alreadyExists(`features[${i}]: a ${found.type} feature with lookup_key ${f.lookup_key} exists`, { [`features[${i}].lookup_key`]: f.lookup_key, feature_id: found.id })
      }
      existing.set(f.ref, found)
      if (f.meter_ref && found.meter_id && !meterIds.has(f.meter_ref)) meterIds.set(f.meter_ref, found.meter_id)
    }
    for (const [i, m] of config.meters.entries()) {
      const known = meterIds.get(m.ref)
      if (known) {
        applied.meters.push({ ref: m.ref, id: known, created: false })
        continue
      }
      const same = (await listMeters(d, actor, page(1000), m.event_name)).items.find(
        (x) => x.aggregation.type === m.aggregation.type && (x.aggregation.field ?? null) === (m.aggregation.field ?? null) && x.filters.length === 0,
      )
      const meter = same ?? (await within(`meters[${i}]`, () => createMeter(d, actor, { name: m.name, event_name: m.event_name, aggregation: m.aggregation })))
      meterIds.set(m.ref, meter.id)
      applied.meters.push({ ref: m.ref, id: meter.id, created: !same })
    }
    for (const [i, f] of config.features.entries()) {
      const found = existing.get(f.ref)
      const { ref: _ref, meter_ref, ...fields } = f
      const feature = found ?? (await within(`features[${i}]`, () => features.create(d, actor, { ...fields, ...(meter_ref && { meter_id: meterIds.get(meter_ref) }) })))
      featureIds.set(f.ref, feature.id)
      applied.features.push({ ref: f.ref, id: feature.id, created: !found })
    }
    for (const [i, p] of config.plans.entries()) {
      const view = await within(`plans[${i}]`, () =>
        createOffering(d, actor, PLAN, {
          name: p.name,
          lookup_key: p.lookup_key,
          description: p.description,
          prices: p.prices.map(({ meter_ref, ...price }) => ({ ...price, ...(meter_ref && { meter_id: meterIds.get(meter_ref) }) })),
          entitlements: p.entitlements.map(({ feature_ref, ...terms }) => ({ ...terms, feature_id: featureIds.get(feature_ref)! })),
        }),
      )
      applied.plans.push(view)
    }
    return applied
  })
}
