// Features: what a plan can include. Metered features count usage through a meter (issue 3's, looked up
// through its service); boolean ones switch something on; static ones carry a value such as "24/7".
import { validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, insertRecord, listRecords, requireRecord, updateRecord } from '../../../infra/records.ts'
import { guards } from '../../records/guards.ts'
import { requireGroup } from '../groups/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { getMeter } from '../meters/service.ts'
import { announce, auditOf, referenced, transaction, uniquely } from '../../records/service.ts'
import * as store from './store.ts'

export type { FeatureRow, FeatureType } from './store.ts'
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
}

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

export async function createFeature(deps: Deps, actor: Actor, input: CreateFeatureInput): Promise<store.FeatureRow> {
  if (input.type === 'metered') {
    if (!input.meter_id) throw validationError('meter_id', 'is required for a metered feature')
    await requireMeter(deps, actor, input.meter_id)
  } else if (input.meter_id) {
    throw validationError('meter_id', `is only allowed for metered features, not ${input.type}`)
  }
  checkAlerts(input.alert_settings)
  if (input.group_id) await requireGroup(deps.sql, actor, input.group_id, 'feature')
  const audit = auditOf(deps, actor)
  return uniquely('feature', [{ index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value: input.lookup_key }], () =>
    transaction(deps, async (tx) => {
      const row = await insertRecord<store.FeatureRow>(tx, store.FEATURES, actor, audit, input)
      await announce(tx, actor, 'feature.created', store.FEATURES, row)
      return row
    }),
  )
}

export const getFeature = (deps: Deps, actor: Actor, id: string): Promise<store.FeatureRow> =>
  requireRecord<store.FeatureRow>(deps.sql, store.FEATURES, actor, id)

/** A published feature a new record (an entitlement) may refer to. */
export const requireFeature = (db: Db, scope: Scope, id: string): Promise<store.FeatureRow> =>
  referenced('feature_id', requireRecord<store.FeatureRow>(db, store.FEATURES, scope, id, { published: true }))

export async function listFeatures(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.FeatureRow>> {
  const { rows, total } = await listRecords<store.FeatureRow>(deps.sql, store.FEATURES, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(rows, total, params)
}

export async function updateFeature(deps: Deps, actor: Actor, id: string, input: UpdateFeatureInput): Promise<store.FeatureRow> {
  const { version, ...fields } = input
  checkAlerts(fields.alert_settings)
  if (fields.group_id) await requireGroup(deps.sql, actor, fields.group_id, 'feature')
  const audit = auditOf(deps, actor)
  return uniquely('feature', [{ index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value: input.lookup_key }], () =>
    transaction(deps, async (tx) => {
      const row = await updateRecord<store.FeatureRow>(tx, store.FEATURES, actor, id, fields, { version, audit })
      await announce(tx, actor, 'feature.updated', store.FEATURES, row)
      return row
    }),
  )
}

/** Checks run before a feature is deleted; entitlements register theirs (a granted feature stays). */
export const featureDeletion = guards()

export async function deleteFeature(deps: Deps, actor: Actor, id: string): Promise<store.FeatureRow> {
  return transaction(deps, async (tx) => {
    await featureDeletion.check(tx, actor, id)
    const row = await deleteRecord<store.FeatureRow>(tx, store.FEATURES, actor, id, auditOf(deps, actor))
    await announce(tx, actor, 'feature.deleted', store.FEATURES, row)
    return row
  })
}
