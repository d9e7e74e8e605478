// Cloning an environment's catalog into another environment of the same tenant (POST
// /v1/environments/{id}/clone), e.g. sandbox → production. In one transaction, in dependency order:
// published meters, groups, features, then plans and addons with their prices and entitlements, and the
// plans' credit grants — each through the service its create or update endpoint calls, with every
// identifier (meter, group, feature, plan) remapped to the target's.
//
// Idempotent: environment_clone_map remembers which target record each source record became (and a copy
// maps back to its original when cloning the other way). Cloning again updates those records (only what changed; a record already equal is left alone), creates what is
// new and, inside a cloned plan or addon, removes the prices, entitlements and credit grants whose source
// was removed — so a plan bills the same in both environments. A record the map does not know is matched by
// lookup_key (features, groups, plans, addons, prices) or, for a meter, by counting the same events the same
// way. A plan or feature removed from the source stays in the target. What cannot be copied is skipped with
// its reason (a feature on an archived meter, a same-key record of another kind in the target).
import { AppError, validationError } from '../../core/errors.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { everyItem, inTransaction, transaction, within } from '../records/service.ts'
import { toWire } from '../records/wire.ts'
import { findEnvironment } from '../tenancy/environments/service.ts'
import { createMeter, listMeters, updateMeter, type Meter } from '../catalog/meters/service.ts'
import { createGroup, listGroups, updateGroup, type GroupView } from '../catalog/groups/service.ts'
import { features, type FeatureRow } from '../catalog/features/service.ts'
import { ADDON, PLAN, type OfferingKind } from '../catalog/offerings/kinds.ts'
import { createOffering, listOfferings, updateOffering, type OfferingView } from '../catalog/offerings/service.ts'
import { createPrice, deletePrice, getPriceByLookupKey, updatePrice, type CreatePriceInput, type PriceRow } from '../catalog/prices/service.ts'
import { createEntitlement, deleteEntitlement, updateEntitlement, type EntitlementView } from '../catalog/entitlements/service.ts'
import { createCreditGrant, deleteCreditGrant, listGrantsOfPlan, updateCreditGrant } from '../credits/grants/service.ts'
import * as store from './store.ts'

type Entity = store.CloneEntity
type Action = 'created' | 'updated' | 'unchanged'

interface Copied {
  entity_type: Entity
  source_id: string
  target_id: string
  action: Action
}

interface Removed {
  entity_type: Entity
  source_id: string
  target_id: string
}

interface Skipped {
  entity_type: Entity
  source_id: string
  reason: string
}

export interface CloneReport {
  source_environment_id: string
  target_environment_id: string
  copied: Copied[]
  removed: Removed[]
  skipped: Skipped[]
  /** Per kind of record: how many were created, updated, left unchanged, removed and skipped. */
  summary: Record<Entity, Record<Action | 'removed' | 'skipped', number>>
}

const ENTITIES: Entity[] = ['meter', 'group', 'feature', 'plan', 'addon', 'price', 'entitlement', 'credit_grant']

/** The fields of `desired` whose value differs from `current`'s (as JSON, null and absent alike). */
function changes<T extends object>(current: object, desired: T): Partial<T> {
  const out: Partial<T> = {}
  const wire = (v: unknown) => JSON.stringify(toWire(v ?? null))
  for (const [k, v] of Object.entries(desired) as [keyof T & string, T[keyof T]][]) {
    if (wire((current as Record<string, unknown>)[k]) !== wire(v)) out[k] = v as T[keyof T & string]
  }
  return out
}

const empty = (o: object) => Object.keys(o).length === 0

/** A price's billing terms: a price matched by lookup_key is taken only when they are the source's. */
const TERMS = ['currency', 'type', 'billing_model', 'billing_cadence', 'billing_period', 'billing_period_count', 'invoice_cadence', 'amount', 'tier_mode', 'tiers', 'transform_quantity', 'trial_period_days', 'min_quantity', 'price_unit_type', 'price_unit', 'price_unit_amount', 'price_unit_tiers', 'conversion_rate', 'start_date', 'end_date'] as const

/** A price as its create request gives it: its terms (no computed amounts for tiered or custom-unit prices), nulls left out. */
function priceInput(p: PriceRow, meterId: string | undefined): Record<string, unknown> {
  const wire = toWire(p) as Record<string, unknown>
  const input: Record<string, unknown> = {}
  for (const k of TERMS) if (wire[k] !== null && wire[k] !== undefined) input[k] = wire[k]
  if (p.billing_model === 'TIERED' || p.price_unit_type === 'CUSTOM') delete input.amount
  if (p.price_unit_type === 'CUSTOM') delete input.tiers
  if (meterId) input.meter_id = meterId
  return input
}

class Clone {
  readonly copied: Copied[] = []
  readonly removed: Removed[] = []
  readonly skipped: Skipped[] = []
  /** source id → target id, and back. */
  private readonly forward = new Map<string, string>()
  private readonly backward = new Map<string, string>()
  /** Source ids the map of this direction holds. */
  private readonly remembered = new Set<string>()

  constructor(
    private readonly d: Deps,
    private readonly pair: store.Pair,
    private readonly src: Actor,
    private readonly dst: Actor,
  ) {}

  async run(): Promise<void> {
    // A copy made by cloning the other way maps back to its original, so a round trip copies nothing twice.
    const back = await store.mapOf(this.d.sql, { ...this.pair, source: this.pair.target, target: this.pair.source })
    for (const row of back) this.link(row.target_id, row.source_id)
    for (const row of await store.mapOf(this.d.sql, this.pair)) {
      this.link(row.source_id, row.target_id)
      this.remembered.add(row.source_id)
    }
    await this.meters()
    await this.groups()
    await this.features()
    for (const kind of [PLAN, ADDON]) await this.offerings(kind)
  }

  private link(source: string, target: string): void {
    this.forward.set(source, target)
    this.backward.set(target, source)
  }

  private async done(entity: Entity, source: string, target: string, action: Action): Promise<void> {
    if (!this.remembered.has(source) || this.forward.get(source) !== target) await store.remember(this.d.sql, this.pair, { entity_type: entity, source_id: source, target_id: target }, this.d.clock.now())
    this.link(source, target)
    this.remembered.add(source)
    this.copied.push({ entity_type: entity, source_id: source, target_id: target, action })
  }

  private skip(entity: Entity, source: string, reason: string): void {
    this.skipped.push({ entity_type: entity, source_id: source, reason })
  }

  /** The target record the source was copied to before, if it is still published there. */
  private mapped<T extends { id: string }>(sourceId: string, targets: T[]): T | undefined {
    const id = this.forward.get(sourceId)
    return id === undefined ? undefined : targets.find((t) => t.id === id)
  }

  private async meters(): Promise<void> {
    const [sources, targets] = [await everyItem((p) => listMeters(this.d, this.src, p)), await everyItem((p) => listMeters(this.d, this.dst, p))]
    const same = (a: Meter, b: Meter) => a.event_name === b.event_name && JSON.stringify(a.aggregation) === JSON.stringify(b.aggregation) && JSON.stringify(a.filters) === JSON.stringify(b.filters)
    for (const m of sources) {
      const t = this.mapped(m.id, targets) ?? targets.find((x) => same(x, m) && !this.backward.has(x.id))
      if (t) {
        const change = changes(t, { name: m.name, filters: m.filters })
        if (!empty(change)) await updateMeter(this.d, this.dst, t.id, change)
        await this.done('meter', m.id, t.id, empty(change) ? 'unchanged' : 'updated')
        continue
      }
      const made = await createMeter(this.d, this.dst, { name: m.name, event_name: m.event_name, aggregation: m.aggregation, filters: m.filters, reset_usage: m.reset_usage, metadata: m.metadata })
      await this.done('meter', m.id, made.id, 'created')
    }
  }

  private async groups(): Promise<void> {
    const list = (actor: Actor) => everyItem((p) => listGroups(this.d, actor, { params: p, filters: {} }))
    const [sources, targets] = [await list(this.src), await list(this.dst)]
    for (const g of sources) {
      const t: GroupView | undefined = this.mapped(g.id, targets) ?? (g.lookup_key ? targets.find((x) => x.lookup_key === g.lookup_key) : undefined)
      if (t && t.entity_type !== g.entity_type) {
        this.skip('group', g.id, `group ${t.id} of the target has lookup_key ${g.lookup_key} and groups ${t.entity_type}s, not ${g.entity_type}s`)
        continue
      }
      const fields = { name: g.name, lookup_key: g.lookup_key, metadata: g.metadata }
      if (t) {
        const change = changes(t, fields)
        if (!empty(change)) await updateGroup(this.d, this.dst, t.id, change)
        await this.done('group', g.id, t.id, empty(change) ? 'unchanged' : 'updated')
        continue
      }
      const made = await createGroup(this.d, this.dst, { ...fields, entity_type: g.entity_type })
      await this.done('group', g.id, made.id, 'created')
    }
  }

  private async features(): Promise<void> {
    const list = (actor: Actor) => everyItem((p) => features.list(this.d, actor, { params: p, filters: {} }))
    const [sources, targets] = [await list(this.src), await list(this.dst)]
    for (const f of sources) {
      const meterId = f.meter_id ? this.forward.get(f.meter_id) : undefined
      if (f.meter_id && !meterId) {
        this.skip('feature', f.id, `its meter ${f.meter_id} is not published in the source`)
        continue
      }
      const t: FeatureRow | undefined = this.mapped(f.id, targets) ?? (f.lookup_key ? targets.find((x) => x.lookup_key === f.lookup_key) : undefined)
      if (t && (t.type !== f.type || (t.meter_id ?? undefined) !== meterId)) {
        this.skip('feature', f.id, `feature ${t.id} of the target has lookup_key ${f.lookup_key} but another type or meter`)
        continue
      }
      const fields = {
        name: f.name,
        description: f.description,
        lookup_key: f.lookup_key,
        unit_singular: f.unit_singular,
        unit_plural: f.unit_plural,
        reporting_unit: f.reporting_unit,
        alert_settings: f.alert_settings,
        group_id: f.group_id ? (this.forward.get(f.group_id) ?? null) : null,
        metadata: f.metadata,
      }
      if (t) {
        const change = changes(t, fields)
        if (!empty(change)) await features.update(this.d, this.dst, t.id, change)
        await this.done('feature', f.id, t.id, empty(change) ? 'unchanged' : 'updated')
        continue
      }
      const made = await features.create(this.d, this.dst, { ...fields, type: f.type, meter_id: meterId })
      await this.done('feature', f.id, made.id, 'created')
    }
  }

  private async offerings(kind: OfferingKind): Promise<void> {
    const entity: Entity = kind === PLAN ? 'plan' : 'addon'
    const list = (actor: Actor) => everyItem((p) => listOfferings(this.d, actor, kind, { params: p, filters: {} }))
    const [sources, targets] = [await list(this.src), await list(this.dst)]
    for (const o of sources) {
      let t: OfferingView | undefined = this.mapped(o.id, targets) ?? (o.lookup_key ? targets.find((x) => x.lookup_key === o.lookup_key) : undefined)
      const fields = { name: o.name, lookup_key: o.lookup_key, description: o.description, metadata: o.metadata, ...(kind === PLAN && { display_order: o.display_order }) }
      if (t) {
        const change = changes(t, fields)
        if (!empty(change)) await updateOffering(this.d, this.dst, kind, t.id, change)
        await this.done(entity, o.id, t.id, empty(change) ? 'unchanged' : 'updated')
      } else {
        t = await createOffering(this.d, this.dst, kind, fields)
        await this.done(entity, o.id, t.id, 'created')
      }
      await within(`${entity} ${o.id}`, async () => {
        await this.prices(kind, o, t)
        await this.entitlements(kind, o, t)
        if (kind === PLAN) await this.grants(o, t)
      })
    }
  }

  /** Removes the target's children that were copied from source children no longer there. */
  private async prune(entity: Entity, sourceIds: Set<string>, targets: { id: string }[], remove: (id: string) => Promise<unknown>): Promise<void> {
    for (const t of targets) {
      const from = this.backward.get(t.id)
      if (from === undefined || sourceIds.has(from)) continue
      await remove(t.id)
      this.removed.push({ entity_type: entity, source_id: from, target_id: t.id })
    }
  }

  private async prices(kind: OfferingKind, o: OfferingView, t: OfferingView): Promise<void> {
    for (const p of o.prices) {
      const meterId = p.meter_id ? this.forward.get(p.meter_id) : undefined
      if (p.meter_id && !meterId) {
        this.skip('price', p.id, `its meter ${p.meter_id} is not published in the source`)
        continue
      }
      const details = {
        lookup_key: p.lookup_key,
        description: p.description,
        display_name: p.display_name,
        group_id: p.group_id ? (this.forward.get(p.group_id) ?? null) : null,
        metadata: p.metadata,
      }
      let tp: PriceRow | undefined = this.mapped(p.id, t.prices)
      if (!tp && p.lookup_key) {
        const found = await getPriceByLookupKey(this.d, this.dst, p.lookup_key).catch((err) => {
          if (err instanceof AppError && err.code === 'not_found') return undefined
          throw err
        })
        const wire = (x: PriceRow) => JSON.stringify(TERMS.map((k) => toWire(x[k] ?? null)))
        if (found && (found.entity_id !== t.id || wire(found) !== wire(p) || (found.meter_id ?? undefined) !== meterId)) {
          this.skip('price', p.id, `price ${found.id} of the target has lookup_key ${p.lookup_key} but another owner or other terms`)
          continue
        }
        tp = found
      }
      if (tp) {
        const change = changes(tp, details)
        if (!empty(change)) await updatePrice(this.d, this.dst, tp.id, change)
        await this.done('price', p.id, tp.id, empty(change) ? 'unchanged' : 'updated')
        continue
      }
      const input = { ...priceInput(p, meterId), ...details, entity_type: kind.entityType, entity_id: t.id } as unknown as CreatePriceInput
      const made = await createPrice(this.d, this.dst, input)
      await this.done('price', p.id, made.id, 'created')
    }
    await this.prune('price', new Set(o.prices.map((p) => p.id)), t.prices, (id) => deletePrice(this.d, this.dst, id))
  }

  private async entitlements(kind: OfferingKind, o: OfferingView, t: OfferingView): Promise<void> {
    for (const e of o.entitlements) {
      const featureId = this.forward.get(e.feature_id)
      if (!featureId) {
        this.skip('entitlement', e.id, `its feature ${e.feature_id} was not copied`)
        continue
      }
      const terms = {
        is_enabled: e.is_enabled,
        usage_limit: e.usage_limit,
        usage_reset_period: e.usage_reset_period,
        is_soft_limit: e.is_soft_limit,
        static_value: e.static_value,
        display_order: e.display_order,
        start_date: e.start_date?.toISOString() ?? null,
        end_date: e.end_date?.toISOString() ?? null,
        metadata: e.metadata,
      }
      const te: EntitlementView | undefined = this.mapped(e.id, t.entitlements) ?? t.entitlements.find((x) => x.feature_id === featureId)
      if (te) {
        const change = changes(te, terms)
        if (!empty(change)) await updateEntitlement(this.d, this.dst, te.id, change)
        await this.done('entitlement', e.id, te.id, empty(change) ? 'unchanged' : 'updated')
        continue
      }
      const made = await createEntitlement(this.d, this.dst, { ...terms, feature_id: featureId, entity_type: kind.entityType, entity_id: t.id })
      await this.done('entitlement', e.id, made.id, 'created')
    }
    await this.prune('entitlement', new Set(o.entitlements.map((e) => e.id)), t.entitlements, (id) => deleteEntitlement(this.d, this.dst, id))
  }

  private async grants(o: OfferingView, t: OfferingView): Promise<void> {
    const [sources, targets] = [(await listGrantsOfPlan(this.d, this.src, o.id)).items, (await listGrantsOfPlan(this.d, this.dst, t.id)).items]
    for (const g of sources) {
      const tg = this.mapped(g.id, targets)
      if (tg) {
        const change = changes(tg, { name: g.name, metadata: g.metadata })
        if (!empty(change)) await updateCreditGrant(this.d, this.dst, tg.id, change)
        await this.done('credit_grant', g.id, tg.id, empty(change) ? 'unchanged' : 'updated')
        continue
      }
      const recurring = g.cadence === 'RECURRING'
      const made = await createCreditGrant(this.d, this.dst, {
        name: g.name,
        scope: 'PLAN',
        plan_id: t.id,
        credits: g.credits.toFixed(),
        cadence: g.cadence,
        ...(recurring && { period: g.period!, period_count: g.period_count ?? 1 }),
        expiration_type: g.expiration_type,
        ...(g.expiration_type === 'DURATION' && { expiration_duration: g.expiration_duration!, expiration_duration_unit: g.expiration_duration_unit! }),
        ...(g.priority !== null && { priority: g.priority }),
        ...(g.conversion_rate && { conversion_rate: g.conversion_rate.toFixed() }),
        ...(g.topup_conversion_rate && { topup_conversion_rate: g.topup_conversion_rate.toFixed() }),
        metadata: g.metadata,
      })
      await this.done('credit_grant', g.id, made.id, 'created')
    }
    await this.prune('credit_grant', new Set(sources.map((g) => g.id)), targets, (id) => deleteCreditGrant(this.d, this.dst, id))
  }

  report(): CloneReport {
    const summary = Object.fromEntries(ENTITIES.map((e) => [e, { created: 0, updated: 0, unchanged: 0, removed: 0, skipped: 0 }])) as CloneReport['summary']
    for (const c of this.copied) summary[c.entity_type][c.action]++
    for (const r of this.removed) summary[r.entity_type].removed++
    for (const s of this.skipped) summary[s.entity_type].skipped++
    return { source_environment_id: this.pair.source, target_environment_id: this.pair.target, copied: this.copied, removed: this.removed, skipped: this.skipped, summary }
  }
}

/**
 * Copies the catalog of environment `sourceId` into `targetId`, both environments of the caller's tenant.
 * The same environment is a validation_error; an environment of another tenant (or none) is not_found.
 * All or nothing: a refusal anywhere leaves the target as it was.
 */
/**
 * Reads one environment and writes another, so it takes the tenant's owner key (as managing another
 * environment's keys does): an environment's admin key finds no other environment, as source or target (404).
 */
export async function cloneEnvironment(deps: Deps, actor: Actor, sourceId: string, targetId: string): Promise<CloneReport> {
  if (!actor.owner) {
    if (sourceId !== actor.environmentId) throw new AppError('not_found', `environment ${sourceId} not found`, { id: sourceId })
    throw new AppError('not_found', `target_environment_id: environment ${targetId} not found (an environment's admin key sees its own environment only)`, { id: targetId, target_environment_id: targetId })
  }
  const source = await findEnvironment(deps, actor, sourceId)
  if (!source || source.status !== 'published') throw new AppError('not_found', `environment ${sourceId} not found`, { id: sourceId })
  if (targetId === sourceId) throw validationError('target_environment_id', 'must be another environment than the one cloned')
  const target = await findEnvironment(deps, actor, targetId)
  if (!target || target.status !== 'published') throw new AppError('not_found', `target_environment_id: environment ${targetId} not found`, { id: targetId, target_environment_id: targetId })
  const pair: store.Pair = { tenantId: actor.tenantId, source: sourceId, target: targetId }
  return transaction(deps, async (tx) => {
    await store.lockTarget(tx, targetId)
    const clone = new Clone(inTransaction(deps, tx), pair, { ...actor, environmentId: sourceId }, { ...actor, environmentId: targetId })
    await clone.run()
    return clone.report()
  })
}
