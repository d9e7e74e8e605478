// Features: what a plan can include. Metered features count usage through a meter (issue 3's, looked up
// through its service); boolean ones switch something on; static ones carry a value such as "24/7".
import { validationError } from '../../../core/errors.ts'
import type { ReportingUnit } from '../../../core/reporting-unit.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { insertRecord, publishedIn, requireRecord } from '../../../infra/records.ts'
import { guards } from '../../records/guards.ts'
import { requireGroup } from '../groups/service.ts'
import { getMeter, insertMeterIn, metersByIds, type CreateMeterInput, type Meter } from '../meters/service.ts'
import { announce, auditOf, referenced, transaction, uniquely } from '../../records/service.ts'
import type { ListRequest, Page } from '../../../core/list.ts'
import { recordService } from '../../records/crud.ts'
import * as store from './store.ts'

export type { FeatureRow } from './store.ts'
export const FILTERS = store.FILTERS
export const FEATURES = store.FEATURES

interface FeatureFields {
  name?: string
  group_id?: string | null
  description?: string | null
  lookup_key?: string | null
  unit_singular?: string | null
  unit_plural?: string | null
  reporting_unit?: store.FeatureRow['reporting_unit']
  alert_settings?: store.AlertSettings | null
  metadata?: Record<string, string>
}

export interface CreateFeatureInput extends FeatureFields {
  name: string
  type: store.FeatureType
  meter_id?: string
  /** A new meter to count this feature through, created with it in one transaction (Flexprice's inline meter). */
  meter?: CreateMeterInput
}

/** A feature as the API shows it: with its meter, when it counts through one. */
export type FeatureView = store.FeatureRow & { meter?: Meter }

export interface UpdateFeatureInput extends FeatureFields {
  version?: number
}

/** A published meter of the scope; an archived one keeps counting for old prices but takes no new ones. */
export async function requireMeter(deps: Deps, scope: Scope, meterId: string): Promise<void> {
  const meter = await referenced('meter_id', getMeter(deps, scope, meterId))
  if (meter.status !== 'published') throw validationError('meter_id', `meter ${meterId} is ${meter.status}`)
}

const LEVELS = ['info', 'warning', 'critical'] as const

/** Levels escalate: with "above", info < warning < critical; with "below", the other way round. */
export function checkAlerts(settings: store.AlertSettings | null | undefined): void {
  if (!settings) return
  const given = LEVELS.filter((l) => settings[l]).map((l) => ({ level: l, ...settings[l]! }))
  const conditions = new Set(given.map((g) => g.condition))
  if (conditions.size > 1) throw validationError('alert_settings', 'all levels must use the same condition')
  for (let i = 1; i < given.length; i++) {
    const [prev, cur] = [given[i - 1], given[i]]
    const ordered = cur.condition === 'above' ? cur.threshold > prev.threshold : cur.threshold < prev.threshold
    if (!ordered) throw validationError(`alert_settings.${cur.level}.threshold`, `must be ${cur.condition === 'above' ? 'above' : 'below'} the ${prev.level} threshold`)
  }
}

/** Checks run before a feature is deleted; entitlements register theirs (a granted feature stays). */
export const featureDeletion = guards()

async function checkCreate(deps: Deps, actor: Actor, input: CreateFeatureInput): Promise<Record<string, unknown>> {
  if (input.meter) {
    if (input.type !== 'metered') throw validationError('meter', `is only allowed for metered features, not ${input.type}`)
    if (input.meter_id) throw validationError('meter', 'give meter_id or meter, not both')
  } else if (input.type === 'metered') {
    if (!input.meter_id) throw validationError('meter_id', 'is required for a metered feature (or meter, to create one with it)')
    await requireMeter(deps, actor, input.meter_id)
  } else if (input.meter_id) {
    throw validationError('meter_id', `is only allowed for metered features, not ${input.type}`)
  }
  await checkUpdate(deps, actor, input)
  return { ...input }
}

async function checkUpdate(deps: Deps, actor: Actor, fields: FeatureFields): Promise<void> {
  checkAlerts(fields.alert_settings)
  if (fields.group_id) await requireGroup(deps.sql, actor, fields.group_id, 'feature')
}

const records = recordService<store.FeatureRow, CreateFeatureInput, UpdateFeatureInput>({
  table: store.FEATURES,
  filters: store.FILTERS,
  unique: { index: store.LOOKUP_KEY_INDEX, field: 'lookup_key' },
  checkCreate,
  checkUpdate,
  announce: true,
  deletion: featureDeletion,
})

/** Features with their meters embedded (the spec's Feature.meter). */
async function withMeters(deps: Deps, scope: Scope, rows: store.FeatureRow[]): Promise<FeatureView[]> {
  const meters = new Map((await metersByIds(deps, scope, [...new Set(rows.flatMap((r) => (r.meter_id ? [r.meter_id] : [])))])).map((m) => [m.id, m]))
  return rows.map((r) => (r.meter_id && meters.has(r.meter_id) ? { ...r, meter: meters.get(r.meter_id) } : r))
}

const one = async (deps: Deps, scope: Scope, row: Promise<store.FeatureRow>): Promise<FeatureView> => (await withMeters(deps, scope, [await row]))[0]

/** A feature with an inline meter: the meter and the feature are written in one transaction, or neither. */
async function createWithMeter(deps: Deps, actor: Actor, input: CreateFeatureInput & { meter: CreateMeterInput }): Promise<store.FeatureRow> {
  const { meter, ...fields } = await checkCreate(deps, actor, input)
  const audit = auditOf(deps, actor)
  return uniquely('feature', [{ index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value: fields.lookup_key }], () =>
    transaction(deps, async (tx) => {
      const created = await insertMeterIn(tx, deps, actor, meter as CreateMeterInput, 'meter.')
      const row = await insertRecord<store.FeatureRow>(tx, store.FEATURES, actor, audit, { ...fields, meter_id: created.id })
      await announce(tx, actor, 'feature.created', store.FEATURES, row)
      return row
    }),
  )
}

export const features = {
  create: (deps: Deps, actor: Actor, input: CreateFeatureInput): Promise<FeatureView> =>
    one(deps, actor, input.meter ? createWithMeter(deps, actor, input as CreateFeatureInput & { meter: CreateMeterInput }) : records.create(deps, actor, input)),
  get: (deps: Deps, actor: Actor, id: string): Promise<FeatureView> => one(deps, actor, records.get(deps, actor, id)),
  async list(deps: Deps, actor: Actor, request: ListRequest): Promise<Page<FeatureView>> {
    const found = await records.list(deps, actor, request)
    return { ...found, items: await withMeters(deps, actor, found.items) }
  },
  update: (deps: Deps, actor: Actor, id: string, input: UpdateFeatureInput): Promise<FeatureView> => one(deps, actor, records.update(deps, actor, id, input)),
  remove: (deps: Deps, actor: Actor, id: string): Promise<FeatureView> => one(deps, actor, records.remove(deps, actor, id)),
}

/** A published feature a new record (an entitlement) may refer to. */
export const requireFeature = (db: Db, scope: Scope, id: string): Promise<store.FeatureRow> =>
  referenced('feature_id', requireRecord<store.FeatureRow>(db, store.FEATURES, scope, id, { published: true }))

/** Whether any feature of the scope, in any status, has its wallet balance alerts enabled (else no customer's can fire). */
export async function anyFeatureAlerts(db: Db, scope: Scope): Promise<boolean> {
  const [row] = await db<{ any: boolean }[]>`SELECT EXISTS (SELECT 1 FROM features WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND alert_settings->>'alert_enabled' = 'true') AS any`
  return row.any
}

/** The reporting unit of each meter's feature that has one (the oldest such feature when several share a meter): how invoices show usage. */
export async function reportingUnitsOfMeters(db: Db, scope: Scope, meterIds: string[]): Promise<Map<string, ReportingUnit>> {
  const rows = await publishedIn<store.FeatureRow>(db, store.FEATURES, scope, 'meter_id', meterIds)
  const units = new Map<string, ReportingUnit>()
  for (const f of rows) if (f.meter_id && f.reporting_unit && !units.has(f.meter_id)) units.set(f.meter_id, f.reporting_unit)
  return units
}
