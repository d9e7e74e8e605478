// The six routes a record resource has, declared once: create, list, search, get, update and soft
// delete. A resource brings its schemas and the service functions it offers (a route per function);
// extra routes stay in its own file.
import type { Actor } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import type { FilterSpec } from '../infra/records.ts'
import type { ListRequest, Page } from '../core/list.ts'
import { defineRoute, type Route } from './route.ts'
import type { JsonSchema } from '../core/validate.ts'
import { fromListQuery, fromSearchBody, listQuery, searchBody } from './record-schema.ts'
import { toWire } from '../domains/records/wire.ts'

interface RecordService<R> {
  create(deps: Deps, actor: Actor, body: any): Promise<R>
  get(deps: Deps, actor: Actor, id: string): Promise<R>
  list(deps: Deps, actor: Actor, request: ListRequest): Promise<Page<R>>
  update(deps: Deps, actor: Actor, id: string, body: any): Promise<R>
  remove(deps: Deps, actor: Actor, id: string): Promise<R>
}

export interface RecordApi<R> {
  /** e.g. /v1/customers */
  path: string
  tag: string
  /** e.g. "customer" */
  noun: string
  sortable: readonly string[]
  filters: FilterSpec
  createBody?: JsonSchema
  updateBody?: JsonSchema
  /** What a create answers: 201 (the default), or 200 where Flexprice documents it and its SDK accepts nothing else. */
  createdStatus?: 200 | 201
  /** What DELETE answers: the deleted record (200, the default) or nothing (204, where Flexprice's clients expect it). */
  deleted?: 'record' | 'no_content'
  service: Partial<RecordService<R>>
}

export function recordRoutes<R>(api: RecordApi<R>): Route[] {
  const { path, tag, noun, service: s } = api
  const item = `${path}/{id}`
  const wire = async (work: Promise<unknown>) => toWire(await work)
  const list = s.list && [
    defineRoute<Record<string, never>, Record<string, unknown>>({
      method: 'GET',
      path,
      tag,
      summary: `List ${noun}s`,
      permission: 'read',
      query: listQuery(api.sortable, api.filters),
      handler: ({ deps, actor, query }) => wire(s.list!(deps, actor, fromListQuery(query))),
    }),
    defineRoute<Record<string, unknown>>({
      method: 'POST',
      path: `${path}/search`,
      tag,
      summary: `Search ${noun}s with filters in the body`,
      permission: 'read',
      body: searchBody(api.sortable, api.filters),
      handler: ({ deps, actor, body }) => wire(s.list!(deps, actor, fromSearchBody(body))),
    }),
  ]
  const routes = [
    s.create &&
      defineRoute<Record<string, unknown>>({
        method: 'POST',
        path,
        tag,
        summary: `Create a ${noun}`,
        permission: 'write',
        body: api.createBody,
        status: api.createdStatus ?? 201,
        handler: ({ deps, actor, body }) => wire(s.create!(deps, actor, body)),
      }),
    ...(list || []),
    s.get && defineRoute({ method: 'GET', path: item, tag, summary: `Get a ${noun}`, permission: 'read', handler: ({ deps, actor, params }) => wire(s.get!(deps, actor, params.id)) }),
    s.update &&
      defineRoute<Record<string, unknown>>({
        method: 'PUT',
        path: item,
        tag,
        summary: `Update a ${noun}; send the version you read to refuse a stale update`,
        permission: 'write',
        body: api.updateBody,
        handler: ({ deps, actor, params, body }) => wire(s.update!(deps, actor, params.id, body)),
      }),
    s.remove &&
      defineRoute({
        method: 'DELETE',
        path: item,
        tag,
        summary: `Delete a ${noun} (soft: its status becomes deleted${api.deleted === 'no_content' ? '; GET still reads it' : ''})`,
        permission: 'write',
        // Nothing to say: a field (Flexprice's end_date, effective_date: a deletion later) is refused, not ignored.
        body: { type: 'object', additionalProperties: false, properties: {} },
        ...(api.deleted === 'no_content'
          ? {
              status: 204,
              handler: async ({ deps, actor, params, ctx }) => {
                await s.remove!(deps, actor, params.id)
                ctx.status = 204
                return undefined
              },
            }
          : { handler: ({ deps, actor, params }) => wire(s.remove!(deps, actor, params.id)) }),
      }),
  ]
  return routes.filter((r): r is Route => Boolean(r))
}
