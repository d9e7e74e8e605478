import type { Scope } from '../../../core/scope.ts'
import type { Role } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { baseFilters, listRows } from '../../../infra/records.ts'
import type { ListParams } from '../../../core/list.ts'

export interface ApiKeyRow {
  id: string
  tenant_id: string
  environment_id: string
  name: string
  display_id: string
  roles: Role[]
  tenant_owner: boolean
  type: string
  expires_at: Date | null
  last_used_at: Date | null
  revoked_at: Date | null
  status: string
  metadata: Record<string, string>
  created_at: Date
  created_by: string | null
  updated_at: Date
  updated_by: string | null
}

const COLUMNS = 'id, tenant_id, environment_id, name, display_id, roles, tenant_owner, type, expires_at, last_used_at, revoked_at, status, metadata, created_at, created_by, updated_at, updated_by'

export async function insertKey(
  db: Db,
  row: Pick<ApiKeyRow, 'id' | 'tenant_id' | 'environment_id' | 'name' | 'display_id' | 'roles' | 'tenant_owner' | 'expires_at' | 'created_by'> & { key_hash: Buffer },
): Promise<ApiKeyRow> {
  const [created] = await db<ApiKeyRow[]>`INSERT INTO api_keys
      (id, tenant_id, environment_id, name, key_hash, display_id, roles, tenant_owner, expires_at, created_by, updated_by)
    VALUES (${row.id}, ${row.tenant_id}, ${row.environment_id}, ${row.name}, ${row.key_hash}, ${row.display_id},
            ${db.array(row.roles)}, ${row.tenant_owner}, ${row.expires_at}, ${row.created_by}, ${row.created_by})
    RETURNING ${db.unsafe(COLUMNS)}`
  return created
}

export async function findByHash(db: Db, hash: Buffer): Promise<ApiKeyRow | undefined> {
  const [row] = await db<ApiKeyRow[]>`SELECT ${db.unsafe(COLUMNS)} FROM api_keys WHERE key_hash = ${hash}`
  return row
}

export async function listKeys(db: Db, scope: Scope, params: ListParams): Promise<{ rows: ApiKeyRow[]; total: number }> {
  return listRows<ApiKeyRow>(db, 'api_keys', baseFilters(db, scope, params), params, COLUMNS)
}

/** A live key of the tenant, in any of its environments. */
export async function findLiveKey(db: Db, tenantId: string, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db<ApiKeyRow[]>`SELECT ${db.unsafe(COLUMNS)} FROM api_keys WHERE id = ${id} AND tenant_id = ${tenantId} AND revoked_at IS NULL`
  return row
}

/** Revokes a live key; answers it with its hash, so the caller can drop it from the lookup cache. */
export async function revokeKey(db: Db, scope: Scope, id: string, by: string, at: Date): Promise<(ApiKeyRow & { key_hash: Buffer }) | undefined> {
  const [row] = await db<(ApiKeyRow & { key_hash: Buffer })[]>`UPDATE api_keys SET revoked_at = ${at}, status = 'deleted', updated_at = ${at}, updated_by = ${by}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND revoked_at IS NULL
    RETURNING ${db.unsafe(COLUMNS)}, key_hash`
  return row
}

/** One statement for every key used since the last flush: no write per request. */
export async function touchKeys(db: Db, used: Map<string, Date>): Promise<void> {
  if (used.size === 0) return
  const ids = [...used.keys()]
  const times = ids.map((id) => used.get(id)!.toISOString())
  await db`UPDATE api_keys AS k SET last_used_at = u.at::timestamptz
    FROM unnest(${db.array(ids)}::text[], ${db.array(times)}::text[]) AS u(id, at)
    WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at::timestamptz)`
}

/** Keys of the scope as users (POST /v1/users/search): by id, and holding any of `roles`. */
export async function listKeysMatching(db: Db, scope: Scope, params: ListParams, match: { ids?: string[]; roles?: Role[] }): Promise<{ rows: ApiKeyRow[]; total: number }> {
  const where = baseFilters(db, scope, params)
  if (match.ids) where.push(db`id = ANY(${match.ids}::text[])`)
  if (match.roles) where.push(db`roles && ${db.array(match.roles)}::text[]`)
  return listRows<ApiKeyRow>(db, 'api_keys', where, params, COLUMNS)
}
