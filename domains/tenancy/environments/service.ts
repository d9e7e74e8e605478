import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { page, type ListParams, type Page } from '../../../core/list.ts'
import * as store from './store.ts'



export const findEnvironment = (deps: Deps, actor: Actor, id: string): Promise<store.EnvironmentRow | undefined> =>
  store.findEnvironment(deps.sql, actor.tenantId, id)

/** Published environments only unless `status` asks otherwise (spec rule 15: the list default). */
export async function listEnvironments(deps: Deps, actor: Actor, params: ListParams): Promise<Page<store.EnvironmentRow>> {
  const { rows, total } = await store.listEnvironments(deps.sql, actor.tenantId, params)
  return page(rows, total, params)
}
