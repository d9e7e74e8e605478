// SQL shared by every record store: scoped lists with filters, sorting and paging, and
// version-checked updates. Every query filters by tenant and environment.
import type postgres from 'postgres'
import type { Scope } from '../core/scope.ts'
import { notFound, versionConflict } from '../core/errors.ts'
import { newId } from '../core/ids.ts'
import { D, type Decimal } from '../core/money.ts'
import type { ListParams } from '../core/list.ts'
import type { Db } from './postgres.ts'

export type Fragment = postgres.PendingQuery<postgres.Row[]>

const and = (db: Db, parts: Fragment[]): Fragment =>
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

// ---- record tables ---------------------------------------------------------------------------------------
// Tables whose rows carry the common record columns (id, scope, status, metadata, version, audit) share
// one insert, read, update and soft delete here, so each store only adds what is its own.

/**
 * A table of records. `decimals` are numeric columns, read as Decimal and written as exact text;
 * `counts` are bigint columns holding counts or limits, read as numbers (exact up to 2^53).
 */
export interface RecordTable {
  name: string
  /** What messages call one record, e.g. "customer". */
  noun: string
  /** Id prefix, e.g. "cus". */
  prefix: string
  decimals?: readonly string[]
  counts?: readonly string[]
}

export interface RecordRow {
  id: string
  tenant_id: string
  environment_id: string
  status: 'published' | 'deleted' | 'archived'
  metadata: Record<string, string>
  version: number
  created_at: Date
  created_by: string | null
  updated_at: Date
  updated_by: string | null
}

/** Who changes a record and when: the caller's clock, so scenario tests can fix time. */
export interface Audit {
  by: string
  at: Date
}

type Fields = Record<string, unknown>

/** Values as the driver takes them: a Decimal as exact text, objects and arrays as jsonb; undefined is left out. */
function encode(db: Db, fields: object): Fields {
  const out: Fields = {}
  for (const [column, value] of Object.entries(fields)) {
    if (value === undefined) continue
    if (D.isDecimal(value)) out[column] = (value as Decimal).toFixed()
    else if (value !== null && typeof value === 'object' && !(value instanceof Date)) out[column] = db.json(value as never)
    else out[column] = value
  }
  return out
}

/** numeric and bigint arrive as text: they become a Decimal or a number here and nowhere else. */
export function decodeRow<T>(table: RecordTable, row: postgres.Row): T {
  for (const column of table.decimals ?? []) if (row[column] != null) row[column] = new D(row[column] as string)
  for (const column of table.counts ?? []) if (row[column] != null) row[column] = Number(row[column])
  return row as T
}

/** A record that a query embedded as JSON (to_jsonb): its times arrive as text and become Dates, as decodeRow's would. */
export function decodeJson<T>(table: RecordTable, json: Record<string, unknown>): T {
  const row: postgres.Row = { ...json, created_at: new Date(json.created_at as string), updated_at: new Date(json.updated_at as string) }
  return decodeRow<T>(table, row)
}

const stamp = (scope: Scope, audit: Audit): Fields => ({
  tenant_id: scope.tenantId,
  environment_id: scope.environmentId,
  created_at: audit.at,
  created_by: audit.by,
  updated_at: audit.at,
  updated_by: audit.by,
})

/**
 * Inserts rows in one statement; each gets a new id unless it brings one. A column that only some rows
 * set is NULL in the others (the statement names one set of columns for all rows).
 */
export async function insertRecords<T>(db: Db, table: RecordTable, scope: Scope, audit: Audit, rows: object[]): Promise<T[]> {
  if (rows.length === 0) return []
  const encoded: Fields[] = rows.map((fields) => ({ id: newId(table.prefix), ...encode(db, fields), ...stamp(scope, audit) }))
  const columns = [...new Set(encoded.flatMap((row) => Object.keys(row)))]
  const values = encoded.map((row) => Object.fromEntries(columns.map((c) => [c, row[c] ?? null])))
  const created = await db`INSERT INTO ${db(table.name)} ${db(values as never, columns)} RETURNING *`
  return created.map((row) => decodeRow<T>(table, row))
}

export async function insertRecord<T>(db: Db, table: RecordTable, scope: Scope, audit: Audit, fields: object): Promise<T> {
  const [row] = await insertRecords<T>(db, table, scope, audit, [fields])
  return row
}

/** One record of the scope in any status; another tenant's record is simply absent. */
async function findRecord<T>(db: Db, table: RecordTable, scope: Scope, id: string): Promise<T | undefined> {
  const [row] = await db`SELECT * FROM ${db(table.name)}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row ? decodeRow<T>(table, row) : undefined
}

/** Several records of the scope by id, in any status, in one query (for embedding them in others). */
export async function findRecords<T>(db: Db, table: RecordTable, scope: Scope, ids: string[]): Promise<T[]> {
  if (ids.length === 0) return []
  const rows = await db`SELECT * FROM ${db(table.name)}
    WHERE id = ANY(${[...new Set(ids)]}::text[]) AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return rows.map((row) => decodeRow<T>(table, row))
}

/** The published record whose `column` (a unique key such as external_id or lookup_key) holds `value`. */
export async function findPublishedBy<T>(db: Db, table: RecordTable, scope: Scope, column: string, value: string): Promise<T | undefined> {
  const [row] = await db`SELECT * FROM ${db(table.name)}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND ${db(column)} = ${value} AND status = 'published'`
  return row ? decodeRow<T>(table, row) : undefined
}

/** Published records whose `column` is one of `values` (the children of several parents), in `order`, then by id. */
export async function publishedIn<T>(db: Db, table: RecordTable, scope: Scope, column: string, values: string[], order: readonly string[] = ['created_at']): Promise<T[]> {
  if (values.length === 0) return []
  const orderBy = [...order, 'id'].map((c): Fragment => db`${db(c)}`).reduce((acc, c) => db`${acc}, ${c}`)
  const rows = await db`SELECT * FROM ${db(table.name)}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
      AND ${db(column)} = ANY(${[...new Set(values)]}::text[]) AND status = 'published'
    ORDER BY ${orderBy}`
  return rows.map((row) => decodeRow<T>(table, row))
}

/** Like findRecord, but not_found when absent, or when not published and `published` is asked. */
export async function requireRecord<T extends { status: string }>(
  db: Db,
  table: RecordTable,
  scope: Scope,
  id: string,
  options: { published?: boolean } = {},
): Promise<T> {
  const row = await findRecord<T>(db, table, scope, id)
  if (!row || (options.published && row.status !== 'published')) throw notFound(table.noun, id)
  return row
}

/**
 * Changes a record that is not deleted, under a row lock, and bumps its version. With `version`
 * given, a record that moved on since the caller read it fails with version_conflict.
 */
export async function updateRecord<T>(
  db: Db,
  table: RecordTable,
  scope: Scope,
  id: string,
  fields: object,
  options: { version?: number; audit: Audit },
): Promise<T> {
  const current = await checkVersion(db, table.name, scope, id, options.version)
  const values = { ...encode(db, fields), version: current + 1, updated_at: options.audit.at, updated_by: options.audit.by }
  const [row] = await db`UPDATE ${db(table.name)} SET ${db(values as never)}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status <> 'deleted'
    RETURNING *`
  if (!row) throw notFound(table.noun, id)
  return decodeRow<T>(table, row)
}

/** A value as jsonb_populate_record reads it back into its column: numeric as exact text, a time as ISO text. */
const jsonValue = (value: unknown): unknown => (D.isDecimal(value) ? (value as Decimal).toFixed() : value instanceof Date ? value.toISOString() : value)

/**
 * updateRecord (without a version check) for many records of the scope in one statement: each row gets its own
 * `fields` and nothing else, its version bumped and its audit columns stamped. The caller holds their row locks or
 * accepts the statement's; a record absent or deleted is not_found.
 */
export async function updateRecords<T>(db: Db, table: RecordTable, scope: Scope, audit: Audit, changes: { id: string; fields: object }[]): Promise<T[]> {
  if (changes.length === 0) return []
  const rows = changes.map(({ id, fields }) => ({
    ...Object.fromEntries(Object.entries(fields).flatMap(([column, value]) => (value === undefined ? [] : [[column, jsonValue(value)]]))),
    id,
  }))
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((c) => c !== 'id')
  // A column only some rows set keeps its value in the others (`e ? column`: the row's JSON has the key).
  const set = columns
    .map((c): Fragment => db`${db(c)} = CASE WHEN v.e ? ${c} THEN (v.r).${db(c)} ELSE t.${db(c)} END`)
    .reduce((acc, c) => db`${acc}, ${c}`, db`version = t.version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}`)
  const updated = await db`UPDATE ${db(table.name)} AS t SET ${set}
    FROM (SELECT e, jsonb_populate_record(NULL::${db(table.name)}, e) AS r FROM jsonb_array_elements(${db.json(rows as never)}) AS e) AS v
    WHERE t.id = (v.r).id AND t.tenant_id = ${scope.tenantId} AND t.environment_id = ${scope.environmentId} AND t.status <> 'deleted'
    RETURNING t.*`
  const byId = new Map(updated.map((row) => [row.id as string, decodeRow<T>(table, row)]))
  return changes.map(({ id }) => {
    const row = byId.get(id)
    if (!row) throw notFound(table.noun, id)
    return row
  })
}

/** Soft delete: the record stays readable with status deleted and leaves every list. */
export const deleteRecord = <T>(db: Db, table: RecordTable, scope: Scope, id: string, audit: Audit): Promise<T> =>
  updateRecord<T>(db, table, scope, id, { status: 'deleted' }, { audit })

export async function listRecords<T>(
  db: Db,
  table: RecordTable,
  scope: Scope,
  params: ListParams,
  where: Fragment[] = [],
): Promise<{ rows: T[]; total: number }> {
  const { rows, total } = await listRows<postgres.Row>(db, table.name, [...baseFilters(db, scope, params), ...where], params)
  return { rows: rows.map((row) => decodeRow<T>(table, row)), total }
}

/** Published records (invoices, credit notes) finalized, or voided after finalization, in [start, end), by finalization. */
export async function finalizedOrVoidedBetween<T>(db: Db, table: RecordTable, scope: Scope, start: Date, end: Date): Promise<T[]> {
  const rows = await db`SELECT * FROM ${db(table.name)}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status = 'published' AND finalized_at IS NOT NULL
      AND ((finalized_at >= ${start} AND finalized_at < ${end}) OR (voided_at >= ${start} AND voided_at < ${end}))
    ORDER BY finalized_at, id`
  return rows.map((row) => decodeRow<T>(table, row))
}

// ---- declared filters -----------------------------------------------------------------------------------

/** eq: equal; in: one of a list; contains: case-insensitive substring; gte / lt: a time range. */
/** `unexpired`: a boolean "allow expired"; false keeps only rows whose column (an end date) is unset or later than now. */
export type FilterOp = 'eq' | 'in' | 'contains' | 'gte' | 'lt' | 'unexpired'
/** Filter name on the wire → the column it reads and how. */
export type FilterSpec = Record<string, { column: string; op: FilterOp }>

/** Declares filters by how they match: `filterSpec({ in: { customer_ids: 'id' }, contains: { name: 'name' } })`. */
export function filterSpec(byOp: Partial<Record<FilterOp, Record<string, string>>>): FilterSpec {
  const spec: FilterSpec = {}
  for (const [op, names] of Object.entries(byOp) as [FilterOp, Record<string, string>][]) {
    for (const [name, column] of Object.entries(names)) spec[name] = { column, op }
  }
  return spec
}

const likePattern = (s: string): string => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** The conditions for the filters a request set; unset filters add nothing. */
export function filterConditions(db: Db, spec: FilterSpec, values: Record<string, unknown>): Fragment[] {
  const parts: Fragment[] = []
  for (const [name, { column, op }] of Object.entries(spec)) {
    const value = values[name]
    if (value === undefined || value === null) continue
    const col = db(column)
    if (op === 'eq') parts.push(db`${col} = ${value as string}`)
    else if (op === 'in') parts.push(db`${col} = ANY(${value as string[]}::text[])`)
    else if (op === 'contains') parts.push(db`${col} ILIKE ${likePattern(value as string)}`)
    else if (op === 'gte') parts.push(db`${col} >= ${new Date(value as string)}`)
    else if (op === 'unexpired') {
      if (value === false) parts.push(db`(${col} IS NULL OR ${col} > now())`)
    } else parts.push(db`${col} < ${new Date(value as string)}`)
  }
  return parts
}
