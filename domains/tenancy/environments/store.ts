import type { Db } from '../../../infra/postgres.ts'
import { listRows } from '../../../infra/records.ts'
import type { ListParams } from '../../../core/list.ts'

export interface EnvironmentRow {
  id: string
  tenant_id: string
  name: string
  type: 'production' | 'sandbox' | 'development'
  slug: string
  status: string
  metadata: Record<string, string>
  version: number
  created_at: Date
  created_by: string | null
  updated_at: Date
  updated_by: string | null
}

export async function insertEnvironment(
  db: Db,
  row: Pick<EnvironmentRow, 'id' | 'tenant_id' | 'name' | 'type' | 'slug' | 'created_by'> & { metadata?: Record<string, string> },
): Promise<EnvironmentRow> {
  const [created] = await db<EnvironmentRow[]>`INSERT INTO environments (id, tenant_id, name, type, slug, metadata, created_by, updated_by)
    VALUES (${row.id}, ${row.tenant_id}, ${row.name}, ${row.type}, ${row.slug}, ${db.json(row.metadata ?? {})}, ${row.created_by}, ${row.created_by})
    RETURNING *`
  return created
}

export async function findEnvironment(db: Db, tenantId: string, id: string): Promise<EnvironmentRow | undefined> {
  const [row] = await db<EnvironmentRow[]>`SELECT * FROM environments WHERE id = ${id} AND tenant_id = ${tenantId}`
  return row
}

/** Environments belong to the tenant, not to an environment: the list is scoped by tenant only. */
export async function listEnvironments(db: Db, tenantId: string, params: ListParams): Promise<{ rows: EnvironmentRow[]; total: number }> {
  const where = [db`tenant_id = ${tenantId}`, db`status = ${params.status}`]
  if (Object.keys(params.metadata).length > 0) where.push(db`metadata @> ${db.json(params.metadata)}`)
  return listRows<EnvironmentRow>(db, 'environments', where, params)
}

/** Renames an environment or changes its metadata; the slug (its stable handle) stays. */
export async function updateEnvironment(db: Db, tenantId: string, id: string, fields: { name?: string; metadata?: Record<string, string> }, by: string, at: Date): Promise<EnvironmentRow | undefined> {
  const [row] = await db<EnvironmentRow[]>`UPDATE environments SET
      name = COALESCE(${fields.name ?? null}, name),
      metadata = COALESCE(${fields.metadata ? db.json(fields.metadata) : null}::jsonb, metadata),
      version = version + 1, updated_at = ${at}, updated_by = ${by}
    WHERE id = ${id} AND tenant_id = ${tenantId} AND status = 'published'
    RETURNING *`
  return row
}
