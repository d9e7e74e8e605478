// SQL shared by every record store: scoped lists with filters, sorting and paging, and
// version-checked updates. Every query filters by tenant and environment.
import type postgres from 'postgres'
import type { Scope } from '../core/scope.ts'
import { notFound, versionConflict } from '../core/errors.ts'
import type { ListParams } from '../api/http/list.ts'
import type { Db } from './postgres.ts'

export type Fragment = postgres.PendingQuery<postgres.Row[]>

export const and = (db: Db, parts: Fragment[]): Fragment =>
  parts.reduce((acc, part) => db`${acc} AND ${part}`)

/** Conditions every list shares: the scope, the record status and the metadata filter. */
export function baseFilters(db: Db, scope: Scope, params: Pick<ListParams, 'status' | 'metadata'>): Fragment[] {
  const parts: Fragment[] = [
    db`tenant_id = ${scope.tenantId}`,
    db`environment_id = ${scope.environmentId}`,
    db`status = ${params.status}`,
  ]
  if (Object.keys(params.metadata).length > 0) parts.push(db`metadata @> ${db.json(params.metadata)}`)
  return parts
}

export async function listRows<T extends object>(
  db: Db,
  table: string,
  where: Fragment[],
  params: Pick<ListParams, 'limit' | 'offset' | 'sort' | 'order'>,
  columns = '*',
): Promise<{ rows: T[]; total: number }> {
  const cond = and(db, where)
  const direction = params.order === 'asc' ? db`ASC` : db`DESC`
  // id breaks ties so pages are stable: ids are time-sortable and unique.
  const [rows, [{ total }]] = await Promise.all([
    db<T[]>`SELECT ${db.unsafe(columns)} FROM ${db(table)} WHERE ${cond}
      ORDER BY ${db(params.sort)} ${direction}, id ${direction} LIMIT ${params.limit} OFFSET ${params.offset}`,
    db<{ total: number }[]>`SELECT count(*)::int AS total FROM ${db(table)} WHERE ${cond}`,
  ])
  return { rows: rows as T[], total }
}

/** Fails with version_conflict when the row moved on since the caller read `expected`. */
export async function checkVersion(db: Db, table: string, scope: Scope, id: string, expected: number | undefined): Promise<number> {
  const [row] = await db<{ version: number }[]>`SELECT version FROM ${db(table)}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} FOR UPDATE`
  if (!row) throw notFound(table.replace(/s$/, ''), id)
  if (expected !== undefined && expected !== row.version) throw versionConflict(id, expected, row.version)
  return row.version
}
