import type { Db } from '../../../infra/postgres.ts'

export async function insertTenant(db: Db, id: string, name: string): Promise<void> {
  await db`INSERT INTO tenants (id, name) VALUES (${id}, ${name})`
}

export async function countTenants(db: Db): Promise<number> {
  const [{ n }] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM tenants`
  return n
}

/** Serializes first-start bootstrap across processes sharing one database. */
export async function lockBootstrap(db: Db): Promise<void> {
  await db`SELECT pg_advisory_xact_lock(7400113002)`
}

export interface TenantRow {
  id: string
  name: string
  status: string
  metadata: Record<string, string>
  created_at: Date
  updated_at: Date
}

export async function findTenant(db: Db, id: string): Promise<TenantRow | undefined> {
  const [row] = await db<TenantRow[]>`SELECT id, name, status, metadata, created_at, updated_at FROM tenants WHERE id = ${id}`
  return row
}

export async function updateTenant(db: Db, id: string, fields: { name?: string; metadata?: Record<string, string> }, at: Date): Promise<TenantRow> {
  const [row] = await db<TenantRow[]>`UPDATE tenants SET
      name = COALESCE(${fields.name ?? null}, name),
      metadata = COALESCE(${fields.metadata ? db.json(fields.metadata) : null}::jsonb, metadata),
      updated_at = ${at}
    WHERE id = ${id}
    RETURNING id, name, status, metadata, created_at, updated_at`
  return row
}
