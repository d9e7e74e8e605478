// The SQL of portal sessions. Every statement names the tenant and environment, except the lookup by token
// hash: the token is what tells which environment a portal request belongs to.
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'

export interface SessionRow {
  id: string
  tenant_id: string
  environment_id: string
  customer_id: string
  expires_at: Date
  revoked_at: Date | null
  created_at: Date
  created_by: string | null
}

const COLUMNS = 'id, tenant_id, environment_id, customer_id, expires_at, revoked_at, created_at, created_by'

export async function insertSession(db: Db, row: Omit<SessionRow, 'revoked_at' | 'created_at'> & { token_hash: Buffer; created_at: Date }): Promise<SessionRow> {
  const [created] = await db<SessionRow[]>`INSERT INTO portal_sessions (id, tenant_id, environment_id, customer_id, token_hash, expires_at, created_at, created_by)
    VALUES (${row.id}, ${row.tenant_id}, ${row.environment_id}, ${row.customer_id}, ${row.token_hash}, ${row.expires_at}, ${row.created_at}, ${row.created_by})
    RETURNING ${db.unsafe(COLUMNS)}`
  return created
}

export async function findByHash(db: Db, hash: Buffer): Promise<SessionRow | undefined> {
  const [row] = await db<SessionRow[]>`SELECT ${db.unsafe(COLUMNS)} FROM portal_sessions WHERE token_hash = ${hash}`
  return row
}

/** Revokes the customer's live sessions; answers how many. */
export async function revokeCustomerSessions(db: Db, scope: Scope, customerId: string, at: Date): Promise<number> {
  const rows = await db`UPDATE portal_sessions SET revoked_at = ${at}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND customer_id = ${customerId} AND revoked_at IS NULL AND expires_at > ${at}
    RETURNING id`
  return rows.length
}

export async function revokeSession(db: Db, scope: Scope, id: string, at: Date): Promise<void> {
  await db`UPDATE portal_sessions SET revoked_at = ${at}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND revoked_at IS NULL`
}

/** Last use, at most once a minute per session: a page load makes a handful of calls. */
export async function touchSession(db: Db, id: string, at: Date): Promise<void> {
  await db`UPDATE portal_sessions SET last_used_at = ${at} WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${new Date(at.getTime() - 60_000)})`
}
