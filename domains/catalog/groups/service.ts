// Groups of prices or features. A member's group_id is the membership; a group's entity_ids are read
// from its members, and setting them moves prices or features into (or out of) the group.
import { AppError, validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, findRecords, insertRecord, listRecords, requireRecord, updateRecord } from '../../../infra/records.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { auditOf, referenced, transaction, uniquely } from '../../records/service.ts'
import * as store from './store.ts'

export const FILTERS = store.FILTERS


export interface GroupView extends store.GroupRow {
  entity_ids: string[]
}

interface GroupFields {
  name?: string
  lookup_key?: string | null
  entity_ids?: string[]
  metadata?: Record<string, string>
}

export interface CreateGroupInput extends GroupFields {
  name: string
  entity_type: store.GroupEntity
}

async function withMembers(db: Db, scope: Scope, rows: store.GroupRow[]): Promise<GroupView[]> {
  const members = (type: store.GroupEntity) => store.membersOf(db, scope, type, rows.filter((r) => r.entity_type === type).map((r) => r.id))
  const all = [...(await members('price')), ...(await members('feature'))]
  return rows.map((row) => ({ ...row, entity_ids: all.filter((m) => m.group_id === row.id).map((m) => m.id) }))
}

/**
 * Every id must be a published price or feature (as the group's type) of this environment: one of the
 * other kind is refused (400), one the environment does not have is not found (404, naming the element).
 */
async function checkMembers(db: Db, scope: Scope, type: store.GroupEntity, ids: string[]): Promise<void> {
  const found = new Set(await store.existing(db, scope, type, ids))
  const index = ids.findIndex((id) => !found.has(id))
  if (index < 0) return
  const missing = ids[index]
  const other = type === 'price' ? 'feature' : 'price'
  if ((await store.existing(db, scope, other, [missing])).length > 0) throw validationError('entity_ids', `${missing} is a ${other}, not a ${type}`)
  throw new AppError('not_found', `entity_ids[${index}]: ${type} ${missing} not found`, { id: missing, [`entity_ids[${index}]`]: missing })
}

const lookupKey = (value: unknown) => [{ index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value }]

export async function createGroup(deps: Deps, actor: Actor, input: CreateGroupInput): Promise<GroupView> {
  const { entity_ids = [], ...fields } = input
  await checkMembers(deps.sql, actor, input.entity_type, entity_ids)
  const audit = auditOf(deps, actor)
  return uniquely('group', lookupKey(fields.lookup_key), () =>
    transaction(deps, async (tx) => {
      const row = await insertRecord<store.GroupRow>(tx, store.GROUPS, actor, audit, fields)
      await store.setMembers(tx, actor, row.entity_type, row.id, entity_ids, audit)
      return (await withMembers(tx, actor, [row]))[0]
    }),
  )
}

export async function getGroup(deps: Deps, actor: Actor, id: string): Promise<GroupView> {
  return (await withMembers(deps.sql, actor, [await requireRecord<store.GroupRow>(deps.sql, store.GROUPS, actor, id)]))[0]
}

export async function listGroups(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<GroupView>> {
  const { rows, total } = await listRecords<store.GroupRow>(deps.sql, store.GROUPS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await withMembers(deps.sql, actor, rows), total, params)
}

export async function updateGroup(deps: Deps, actor: Actor, id: string, input: GroupFields & { version?: number }): Promise<GroupView> {
  const { entity_ids, version, ...fields } = input
  const audit = auditOf(deps, actor)
  return uniquely('group', lookupKey(fields.lookup_key), () =>
    transaction(deps, async (tx) => {
      const row = await updateRecord<store.GroupRow>(tx, store.GROUPS, actor, id, fields, { version, audit })
      if (entity_ids) {
        await checkMembers(tx, actor, row.entity_type, entity_ids)
        await store.setMembers(tx, actor, row.entity_type, id, entity_ids, audit)
      }
      return (await withMembers(tx, actor, [row]))[0]
    }),
  )
}

/** Its members stay, ungrouped. */
export async function deleteGroup(deps: Deps, actor: Actor, id: string): Promise<GroupView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const row = await deleteRecord<store.GroupRow>(tx, store.GROUPS, actor, id, audit)
    await store.setMembers(tx, actor, row.entity_type, id, [], audit)
    return { ...row, entity_ids: [] }
  })
}

/** A published group that a new price or feature may join: it must group that kind of record. */
export async function requireGroup(db: Db, scope: Scope, id: string, entityType: store.GroupEntity): Promise<void> {
  const group = await referenced('group_id', requireRecord<store.GroupRow>(db, store.GROUPS, scope, id, { published: true }))
  if (group.entity_type !== entityType) throw validationError('group_id', `group ${id} groups ${group.entity_type}s, not ${entityType}s`)
}

/** Groups by id in any status, with their members, for embedding (a price's group). */
export async function groupsByIds(db: Db, scope: Scope, ids: string[]): Promise<Map<string, GroupView>> {
  return new Map((await withMembers(db, scope, await findRecords<store.GroupRow>(db, store.GROUPS, scope, ids))).map((g) => [g.id, g]))
}
