// The record service of a plain resource, declared once: create, get, list, update and soft delete with
// audit stamps, one transaction per change, unique keys answered as already_exists and, where the
// resource announces its changes, `<noun>.created|updated|deleted` in the outbox of that transaction.
// A resource declares only what differs: how a create body is checked, what an update may not break,
// which guards a deletion runs.
import { type ListRequest, type Page, page } from '../../core/list.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { deleteRecord, filterConditions, insertRecord, listRecords, requireRecord, updateRecord, type FilterSpec, type RecordTable } from '../../infra/records.ts'
import type { Guards } from './guards.ts'
import { announce, auditOf, transaction, uniquely } from './service.ts'

export interface RecordSpec<C, U> {
  table: RecordTable
  filters: FilterSpec
  /** What already_exists calls the record ("tax rate"); the table's noun when absent. */
  label?: string
  /** A unique index a create or update may clash on, and the field a clash is reported by. */
  unique?: { index: string; field: string }
  /** Checks a create body and gives the columns to insert. */
  checkCreate?: (deps: Deps, actor: Actor, input: C) => Record<string, unknown> | Promise<Record<string, unknown>>
  /** Checks the fields an update changes (its version aside). */
  checkUpdate?: (deps: Deps, actor: Actor, fields: Omit<U, 'version'>) => void | Promise<void>
  /** Writes `<noun>.created|updated|deleted` to the outbox with each change. */
  announce?: boolean
  /** Run in the deletion's transaction; a guard refuses by throwing. */
  deletion?: Guards
}

export interface RecordService<R, C, U> {
  create(deps: Deps, actor: Actor, input: C): Promise<R>
  get(deps: Deps, actor: Actor, id: string): Promise<R>
  list(deps: Deps, actor: Actor, request: ListRequest): Promise<Page<R>>
  update(deps: Deps, actor: Actor, id: string, input: U): Promise<R>
  remove(deps: Deps, actor: Actor, id: string): Promise<R>
}

export function recordService<R extends { id: string; status: string }, C extends object, U extends { version?: number }>(spec: RecordSpec<C, U>): RecordService<R, C, U> {
  const { table } = spec
  const keys = (fields: Record<string, unknown>) => (spec.unique ? [{ ...spec.unique, value: fields[spec.unique.field] }] : [])
  const announced = async (tx: Parameters<typeof announce>[0], actor: Actor, action: string, row: R): Promise<R> => {
    if (spec.announce) await announce(tx, actor, `${table.noun}.${action}`, table, row)
    return row
  }
  return {
    async create(deps, actor, input) {
      const fields = spec.checkCreate ? await spec.checkCreate(deps, actor, input) : (input as Record<string, unknown>)
      const audit = auditOf(deps, actor)
      return uniquely(spec.label ?? table.noun, keys(fields), () => transaction(deps, async (tx) => announced(tx, actor, 'created', await insertRecord<R>(tx, table, actor, audit, fields))))
    },
    get: (deps, actor, id) => requireRecord<R>(deps.sql, table, actor, id),
    async list(deps, actor, { params, filters }) {
      const { rows, total } = await listRecords<R>(deps.sql, table, actor, params, filterConditions(deps.sql, spec.filters, filters))
      return page(rows, total, params)
    },
    async update(deps, actor, id, input) {
      const { version, ...fields } = input
      await spec.checkUpdate?.(deps, actor, fields)
      const audit = auditOf(deps, actor)
      return uniquely(spec.label ?? table.noun, keys(fields), () =>
        transaction(deps, async (tx) => announced(tx, actor, 'updated', await updateRecord<R>(tx, table, actor, id, fields, { version, audit }))),
      )
    },
    remove: (deps, actor, id) =>
      transaction(deps, async (tx) => {
        await spec.deletion?.check(tx, actor, id)
        return announced(tx, actor, 'deleted', await deleteRecord<R>(tx, table, actor, id, auditOf(deps, actor)))
      }),
  }
}
