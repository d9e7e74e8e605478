// Features: what a plan can include. Metered features count usage through a meter (issue 3's, looked up
// through its service); boolean ones switch something on; static ones carry a value such as "24/7".
import { validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { requireRecord } from '../../../infra/records.ts'
import { guards } from '../../records/guards.ts'
import { requireGroup } from '../groups/service.ts'
import { getMeter } from '../meters/service.ts'
import { referenced } from '../../records/service.ts'
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

/** Checks run before a feature is deleted; entitlements register theirs (a granted feature stays). */
export const featureDeletion = guards()

async function checkCreate(deps: Deps, actor: Actor, input: CreateFeatureInput): Promise<Record<string, unknown>> {
  if (input.type === 'metered') {
    if (!input.meter_id) throw validationError('meter_id', 'is required for a metered feature')
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

export const features = recordService<store.FeatureRow, CreateFeatureInput, UpdateFeatureInput>({
  table: store.FEATURES,
  filters: store.FILTERS,
  unique: { index: store.LOOKUP_KEY_INDEX, field: 'lookup_key' },
  checkCreate,
  checkUpdate,
  announce: true,
  deletion: featureDeletion,
})

/** A published feature a new record (an entitlement) may refer to. */
export const requireFeature = (db: Db, scope: Scope, id: string): Promise<store.FeatureRow> =>
  referenced('feature_id', requireRecord<store.FeatureRow>(db, store.FEATURES, scope, id, { published: true }))
