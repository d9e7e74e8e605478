// SQL of the clone map: which target record each source record was copied to.
import type { Db } from '../../infra/postgres.ts'

export type CloneEntity = 'meter' | 'group' | 'feature' | 'plan' | 'addon' | 'price' | 'entitlement' | 'credit_grant'

export interface Pair {
  tenantId: string
  source: string
  target: string
}

export interface MapRow {
  entity_type: CloneEntity
  source_id: string
  target_id: string
}

/** One clone into a target at a time: a second waits for the first to commit, then sees its map. */
export async function lockTarget(db: Db, target: string): Promise<void> {
  await db`SELECT pg_advisory_xact_lock(hashtext(${`environment-clone:${target}`}))`
}

export function mapOf(db: Db, pair: Pair): Promise<MapRow[]> {
  return db<MapRow[]>`SELECT entity_type, source_id, target_id FROM environment_clone_map
    WHERE tenant_id = ${pair.tenantId} AND source_environment_id = ${pair.source} AND target_environment_id = ${pair.target}`
}

export async function remember(db: Db, pair: Pair, row: MapRow, at: Date): Promise<void> {
  await db`INSERT INTO environment_clone_map (tenant_id, source_environment_id, target_environment_id, entity_type, source_id, target_id, created_at, updated_at)
    VALUES (${pair.tenantId}, ${pair.source}, ${pair.target}, ${row.entity_type}, ${row.source_id}, ${row.target_id}, ${at}, ${at})
    ON CONFLICT (source_environment_id, target_environment_id, source_id) DO UPDATE SET target_id = EXCLUDED.target_id, updated_at = EXCLUDED.updated_at`
}
