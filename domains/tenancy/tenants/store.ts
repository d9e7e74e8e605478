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
