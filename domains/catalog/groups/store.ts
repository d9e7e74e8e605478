// Groups and their members: the published prices or features whose group_id names the group.
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { filterSpec, type Audit, type FilterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const GROUPS: RecordTable = { name: 'groups', noun: 'group', prefix: 'group' }
export const LOOKUP_KEY_INDEX = 'groups_lookup_key'

export const FILTERS: FilterSpec = filterSpec({
  in: { group_ids: 'id' },
  eq: { entity_type: 'entity_type', lookup_key: 'lookup_key' },
  contains: { name: 'name' },
})

export type GroupEntity = 'price' | 'feature'
const MEMBERS: Record<GroupEntity, string> = { price: 'prices', feature: 'features' }

export interface GroupRow extends RecordRow {
  name: string
  lookup_key: string | null
  entity_type: GroupEntity
}

/** Member ids of several groups, oldest member first. */
export async function membersOf(db: Db, scope: Scope, entityType: GroupEntity, groupIds: string[]): Promise<{ id: string; group_id: string }[]> {
  if (groupIds.length === 0) return []
  return db<{ id: string; group_id: string }[]>`SELECT id, group_id FROM ${db(MEMBERS[entityType])}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
      AND group_id = ANY(${groupIds}::text[]) AND status = 'published'
    ORDER BY created_at, id`
}

/** Published members among `ids`: those that exist in the scope. */
export async function existing(db: Db, scope: Scope, entityType: GroupEntity, ids: string[]): Promise<string[]> {
  const rows = await db<{ id: string }[]>`SELECT id FROM ${db(MEMBERS[entityType])}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND id = ANY(${ids}::text[]) AND status = 'published'`
  return rows.map((r) => r.id)
}

/** Makes `ids` the group's members: others leave it, these join it (from whatever group they were in). */
export async function setMembers(db: Db, scope: Scope, entityType: GroupEntity, groupId: string, ids: string[], audit: Audit): Promise<void> {
  const table = db(MEMBERS[entityType])
  await db`UPDATE ${table} SET group_id = NULL, version = version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND group_id = ${groupId} AND NOT (id = ANY(${ids}::text[]))`
  await db`UPDATE ${table} SET group_id = ${groupId}, version = version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND id = ANY(${ids}::text[]) AND group_id IS DISTINCT FROM ${groupId}`
}
