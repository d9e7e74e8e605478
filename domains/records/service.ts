// What every record service does the same way: audit stamps from the caller and the clock, one
// transaction per change, the outbox event in that transaction, and unique keys as already_exists.
import { alreadyExists, AppError } from '../../core/errors.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import type { ListParams, Page } from '../../core/list.ts'
import type { Deps } from '../../infra/deps.ts'
import { recordEvents } from '../../infra/outbox.ts'
import { writeCommitted } from '../../infra/read-cache.ts'
import type { Db, Sql, Tx } from '../../infra/postgres.ts'
import type { Audit, RecordTable } from '../../infra/records.ts'
import { toWire } from './wire.ts'

export const auditOf = (deps: Deps, actor: Actor): Audit => ({ by: actor.keyId, at: deps.clock.now() })

/** One transaction per change; once it commits, cached hot reads (infra/read-cache.ts) are read again. */
export async function transaction<T>(deps: Deps, work: (tx: Tx) => Promise<T>): Promise<T> {
  const result = (await deps.sql.begin(work)) as T
  writeCommitted()
  return result
}

/**
 * Deps whose every query runs in `tx`: a service's own transaction (`deps.sql.begin`) becomes a savepoint of
 * it. Services then compose into one all-or-nothing change — creating a parsed pricing configuration,
 * cloning an environment — through the same functions the routes call, without in-transaction copies of
 * each. A failure inside rolls its savepoint back and propagates, so the caller's transaction fails whole.
 */
export function inTransaction(deps: Deps, tx: Tx): Deps {
  const sql = new Proxy(tx, {
    get(target, property, receiver) {
      if (property === 'begin') return (a: unknown, b?: unknown) => target.savepoint((typeof a === 'function' ? a : b) as (sql: Tx) => Promise<unknown>)
      return Reflect.get(target, property, receiver)
    },
  })
  return { ...deps, sql: sql as unknown as Sql }
}

/** Writes `<noun>.<action>` to the outbox with the record as the payload, in the caller's transaction. */
export async function announce(db: Db, scope: Scope, eventType: string, table: RecordTable, record: { id: string }): Promise<void> {
  await announceMany(db, scope, table, [{ eventType, record }])
}

/** announce for many records of one table and scope, in one statement. */
export async function announceMany(db: Db, scope: Scope, table: RecordTable, events: { eventType: string; record: { id: string } }[]): Promise<void> {
  await recordEvents(db, scope, events.map(({ eventType, record }) => ({ eventType, entityType: table.noun, entityId: record.id, payload: { [table.noun]: toWire(record) } })))
}

/** A unique index of the table, and the field and value a clash on it is reported with. */
export interface UniqueKey {
  index: string
  field: string
  value: unknown
}

/** Runs `work`; a clash on one of `keys` becomes already_exists naming the field (the index decides, so races are covered). */
export async function uniquely<T>(noun: string, keys: UniqueKey[], work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    const e = err as { code?: string; constraint_name?: string }
    const key = e.code === '23505' ? keys.find((k) => k.index === e.constraint_name) : undefined
    if (!key) throw err
    throw alreadyExists(`a ${noun} with ${key.field} ${JSON.stringify(key.value)} already exists`, { [key.field]: key.value })
  }
}

/** Looks up a record a request refers to: when it is missing, not_found also names the request field. */
export async function referenced<T>(field: string, lookup: Promise<T>): Promise<T> {
  try {
    return await lookup
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') throw new AppError('not_found', `${field}: ${err.message}`, { ...err.details, [field]: err.details.id })
    throw err
  }
}

/**
 * Runs `work` for one element of a request list: its validation errors and the fields its missing
 * references name are the element's ("prices[2].amount", "prices[2].meter_id").
 */
export async function within<T>(prefix: string, work: () => T | Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    if (!(err instanceof AppError) || (err.code !== 'validation_error' && err.code !== 'not_found')) throw err
    const details = Object.fromEntries(Object.entries(err.details).map(([k, v]) => [err.code === 'not_found' && k === 'id' ? k : `${prefix}.${k}`, v]))
    throw new AppError(err.code, `${prefix}.${err.message}`, details)
  }
}

/** Who jobs act as when they read other domains through their services: the system, in the record's scope. */
export const systemActor = (scope: Scope): Actor => ({ tenantId: scope.tenantId, environmentId: scope.environmentId, keyId: 'system', roles: ['admin'] })

/** Every item of a list service, page by page (a page holds at most 1000). */
export async function everyItem<T>(list: (params: ListParams) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = []
  for (let offset = 0; ; offset += 1000) {
    const { items: batch, pagination } = await list({ limit: 1000, offset, sort: 'created_at', order: 'asc', status: 'published', metadata: {} })
    items.push(...batch)
    if (offset + batch.length >= pagination.total || batch.length === 0) return items
  }
}
