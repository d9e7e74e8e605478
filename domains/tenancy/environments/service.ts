// A tenant's environments: production and sandbox made with the tenant, more made over the API (Flexprice's
// createEnvironment) by the tenant's owner key, which also mints their keys; renamed (updateEnvironment) by it or
// by the environment's own admin key.
import { AppError, notFound, validationError } from '../../../core/errors.ts'
import { newId } from '../../../core/ids.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { page, type ListParams, type Page } from '../../../core/list.ts'
import { uniquely } from '../../records/service.ts'
import * as store from './store.ts'

export const ENVIRONMENT_TYPES = ['production', 'sandbox', 'development'] as const

export interface EnvironmentInput {
  name: string
  type: store.EnvironmentRow['type']
  metadata?: Record<string, string>
}

export const findEnvironment = (deps: Deps, actor: Actor, id: string): Promise<store.EnvironmentRow | undefined> =>
  store.findEnvironment(deps.sql, actor.tenantId, id)

/** Published environments only unless `status` asks otherwise (spec rule 15: the list default). */
export async function listEnvironments(deps: Deps, actor: Actor, params: ListParams): Promise<Page<store.EnvironmentRow>> {
  const { rows, total } = await store.listEnvironments(deps.sql, actor.tenantId, params)
  return page(rows, total, params)
}

/** Environments are the tenant's: only its owner key (the one it was created with) makes them. */
function requireOwner(actor: Actor, doing: string): void {
  if (!actor.owner) throw new AppError('permission_denied', `${doing} takes the tenant's owner key (the key the tenant was created with)`, {})
}

/** The handle an environment is known by besides its id: its name in lower case, words joined by dashes. */
function slugOf(name: string): string {
  const slug = name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
  if (!slug) throw validationError('name', 'must contain a letter or a digit')
  return slug
}

export async function createEnvironment(deps: Deps, actor: Actor, input: EnvironmentInput): Promise<store.EnvironmentRow> {
  requireOwner(actor, 'creating an environment')
  const slug = slugOf(input.name)
  const row = { id: newId('env'), tenant_id: actor.tenantId, name: input.name, type: input.type, slug, metadata: input.metadata, created_by: actor.keyId }
  return uniquely('environment', [{ index: 'environments_tenant_id_slug_key', field: 'name', value: input.name }], () => store.insertEnvironment(deps.sql, row))
}

/**
 * Renames an environment or replaces its metadata; its type is fixed at creation (as Flexprice's). The owner key
 * changes any of the tenant's, an environment's admin key its own (another is not found for it, as its records are).
 */
export async function updateEnvironment(deps: Deps, actor: Actor, id: string, input: Partial<EnvironmentInput>): Promise<store.EnvironmentRow> {
  const current = actor.owner || id === actor.environmentId ? await store.findEnvironment(deps.sql, actor.tenantId, id) : undefined
  if (!current || current.status !== 'published') throw notFound('environment', id)
  if (input.type !== undefined && input.type !== current.type) throw validationError('type', `cannot be changed: the environment is ${current.type}`)
  const row = await store.updateEnvironment(deps.sql, actor.tenantId, id, { name: input.name, metadata: input.metadata }, actor.keyId, deps.clock.now())
  if (!row) throw notFound('environment', id)
  return row
}
