// Meters: create, read, rename or refilter, archive. A new meter or new filters start a revision that the
// backfill fills from raw events; until it is done, usage of that meter is read from the ready revision.
import { AppError, notFound, validationError } from '../../../core/errors.ts'
import { newId } from '../../../core/ids.ts'
import { needsField, takesExpression, type AggregationType, type MeterFilter, type MeterRules } from '../../../core/meters.ts'
import { compileExpression, ExpressionError } from '../../../core/meter-expression.ts'
import { parseDecimal } from '../../../core/money.ts'
import type { WindowSize } from '../../../core/periods.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { page, type ListParams, type Page } from '../../../core/list.ts'
import * as store from './store.ts'

/** A meter as the API shows it; revision is its filters' version, ready_revision the one queries read (0: none yet). */
export interface Meter extends Omit<store.MeterRow, 'revised_at' | 'aggregation'> {
  aggregation: { type: AggregationType; field?: string; multiplier?: string; group_by?: string; bucket_size?: WindowSize; expression?: string }
  backfill: { revision: number; status: string; processed: number; total: number | null; error: string | null }
}

export interface CreateMeterInput {
  name: string
  event_name: string
  aggregation: { type: AggregationType; field?: string; multiplier?: string | number; group_by?: string; bucket_size?: WindowSize; expression?: string }
  filters?: MeterFilter[]
  reset_usage?: 'BILLING_PERIOD' | 'NEVER'
  metadata?: Record<string, string>
}

export interface UpdateMeterInput {
  name?: string
  filters?: MeterFilter[]
  version?: number
}

function view(row: store.MeterRow, revision: store.RevisionRow | undefined): Meter {
  const { revised_at: _revisedAt, ...rest } = row
  return {
    ...rest,
    aggregation: row.aggregation as Meter['aggregation'],
    backfill: {
      revision: row.revision,
      status: revision?.status ?? 'pending',
      processed: Number(revision?.processed ?? 0),
      total: revision?.total == null ? null : Number(revision.total),
      error: revision?.error ?? null,
    },
  }
}

async function present(deps: Deps, rows: store.MeterRow[]): Promise<Meter[]> {
  const revisions = await store.revisionsOf(deps.sql, rows.map((r) => r.id))
  const current = new Map(revisions.map((r) => [`${r.meter_id}/${r.revision}`, r]))
  return rows.map((r) => view(r, current.get(`${r.id}/${r.revision}`)))
}

function cleanFilters(filters: MeterFilter[]): MeterFilter[] {
  return filters.map((f, i) => {
    const key = f.key.trim()
    if (key === '') throw validationError(`filters[${i}].key`, 'must not be blank')
    return { key, values: [...new Set(f.values)] }
  })
}

function cleanAggregation(input: CreateMeterInput['aggregation']): store.AggregationJson {
  const { type } = input
  const field = input.field?.trim()
  const expression = input.expression?.trim()
  const out: store.AggregationJson = { type }
  if (expression !== undefined) {
    // The expression computes each event's value: it takes the place of the field.
    if (!takesExpression(type)) throw validationError('aggregation.expression', `is not taken by ${type}: it computes the value that SUM, AVG, MIN, MAX, LATEST, SUM_WITH_MULTIPLIER and WEIGHTED_SUM aggregate`)
    if (field) throw validationError('aggregation.field', 'give field or expression, not both')
    try {
      compileExpression(expression)
    } catch (err) {
      if (err instanceof ExpressionError) throw validationError('aggregation.expression', err.message)
      throw err
    }
    out.expression = expression
  } else if (needsField(type) && !field) throw validationError('aggregation.field', `is required for ${type}`)
  if (field) out.field = field
  if (type === 'SUM_WITH_MULTIPLIER') {
    if (input.multiplier === undefined) throw validationError('aggregation.multiplier', 'is required for SUM_WITH_MULTIPLIER')
    try {
      const m = parseDecimal(String(input.multiplier))
      if (m.lte(0)) throw new RangeError('not positive')
      out.multiplier = m.toFixed()
    } catch {
      throw validationError('aggregation.multiplier', 'must be a positive decimal number')
    }
  } else if (input.multiplier !== undefined) {
    throw validationError('aggregation.multiplier', 'is only allowed for SUM_WITH_MULTIPLIER')
  }
  const groupBy = input.group_by?.trim()
  if (groupBy) out.group_by = groupBy
  if (input.bucket_size) out.bucket_size = input.bucket_size
  return out
}

export async function createMeter(deps: Deps, actor: Actor, input: CreateMeterInput): Promise<Meter> {
  const row = await deps.sql.begin((tx) => insertMeterIn(tx, deps, actor, input))
  return (await present(deps, [row]))[0]
}

/** Checks a new meter and writes it in the caller's transaction (a feature created with its meter). */
export async function insertMeterIn(tx: Db, deps: Deps, actor: Actor, input: CreateMeterInput, field = ''): Promise<store.MeterRow> {
  const name = input.name.trim()
  const eventName = input.event_name.trim()
  if (!name) throw validationError(`${field}name`, 'must not be blank')
  if (!eventName) throw validationError(`${field}event_name`, 'must not be blank')
  return store.insertMeter(
    tx,
    {
      id: newId('meter'),
      tenant_id: actor.tenantId,
      environment_id: actor.environmentId,
      name,
      event_name: eventName,
      filters: cleanFilters(input.filters ?? []),
      aggregation: cleanAggregation(input.aggregation),
      reset_usage: input.reset_usage ?? 'BILLING_PERIOD',
      metadata: input.metadata ?? {},
      created_by: actor.keyId,
    },
    deps.clock.now(),
  )
}

/** Meters of the scope by id, as the API shows them (embedded in the features that count through them). */
export async function metersByIds(deps: Deps, scope: Scope, ids: string[]): Promise<Meter[]> {
  if (ids.length === 0) return []
  return present(deps, await store.findMeters(deps.sql, scope, ids))
}

/** One meter of the scope, archived ones included (invoices of past periods still read them). */
export async function getMeter(deps: Deps, scope: Scope, id: string): Promise<Meter> {
  const found = await store.findMeterWithRevision(deps.sql, scope, id)
  if (!found || found.meter.status === 'deleted') throw notFound('meter', id)
  return view(found.meter, found.revision)
}

export async function listMeters(deps: Deps, scope: Scope, params: ListParams, eventName?: string): Promise<Page<Meter>> {
  const { rows, total } = await store.listMeters(deps.sql, scope, params, eventName?.trim())
  return page(await present(deps, rows), total, params)
}

export async function updateMeter(deps: Deps, actor: Actor, id: string, input: UpdateMeterInput): Promise<Meter> {
  const name = input.name?.trim()
  if (name === '') throw validationError('name', 'must not be blank')
  const row = await deps.sql.begin(async (tx) => {
    const current = await store.findMeter(tx, actor, id)
    if (!current || current.status === 'deleted') throw notFound('meter', id)
    if (input.version !== undefined && input.version !== current.version) {
      throw new AppError('version_conflict', `meter ${id} is at version ${current.version}, not ${input.version}`, {
        id,
        expected_version: input.version,
        current_version: current.version,
      })
    }
    if (current.status !== 'published') throw new AppError('invalid_operation', `meter ${id} is ${current.status}`, { id, status: current.status })
    const filters = input.filters === undefined ? undefined : cleanFilters(input.filters)
    const unchanged = filters !== undefined && JSON.stringify(filters) === JSON.stringify(current.filters)
    return store.updateMeter(tx, actor, id, { name, filters: unchanged ? undefined : filters, by: actor.keyId, at: deps.clock.now() })
  })
  return (await present(deps, [row!]))[0]
}

export async function archiveMeter(deps: Deps, actor: Actor, id: string): Promise<Meter> {
  const current = await store.findMeter(deps.sql, actor, id)
  if (!current || current.status === 'deleted') throw notFound('meter', id)
  const row = await store.setStatus(deps.sql, actor, id, 'archived', actor.keyId, deps.clock.now())
  return (await present(deps, [row!]))[0]
}

function rules(row: Pick<store.MeterRow, 'id' | 'event_name' | 'aggregation'>, revision: number, filters: MeterFilter[]): MeterRules {
  const a = row.aggregation
  return {
    id: row.id,
    revision,
    eventName: row.event_name,
    filters,
    aggregation: {
      type: a.type as AggregationType,
      field: a.field,
      multiplier: a.multiplier,
      groupBy: a.group_by,
      bucketSize: a.bucket_size as WindowSize | undefined,
      expression: a.expression,
    },
  }
}

/** The rules a usage query of this meter reads with: its ready revision (0 while none is ready). */
export const queryRules = (m: Meter): MeterRules => rules(m, m.ready_revision, m.filters)

/** The rules one meter revision resolves events with (the backfill of that revision). */
export const revisionRules = (row: store.MeterRow): MeterRules => rules(row, row.revision, row.filters)

/**
 * What the batch writer resolves events against: every published meter of the scopes at its current
 * revision, and also at its ready revision while a newer one is being backfilled.
 */
export async function resolutionRules(deps: Deps, scopes: Scope[]): Promise<Map<string, MeterRules[]>> {
  const rows = await store.publishedMeters(deps.sql, scopes)
  const stale = rows.filter((r) => r.ready_revision > 0 && r.ready_revision < r.revision)
  const older = new Map((await store.revisionsOf(deps.sql, stale.map((r) => r.id))).map((r) => [`${r.meter_id}/${r.revision}`, r]))
  const byScope = new Map<string, MeterRules[]>()
  for (const row of rows) {
    const list = byScope.get(scopeKey(row.tenant_id, row.environment_id)) ?? []
    list.push(revisionRules(row))
    const ready = older.get(`${row.id}/${row.ready_revision}`)
    if (ready && row.ready_revision < row.revision) list.push(rules(row, ready.revision, ready.filters))
    byScope.set(scopeKey(row.tenant_id, row.environment_id), list)
  }
  return byScope
}

export const scopeKey = (tenantId: string, environmentId: string): string => `${tenantId}\u0000${environmentId}`

