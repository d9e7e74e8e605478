// The routes split into one router per group of their first two path segments (`/v1/customers`), found by a Map
// lookup: @koa/router tests every route's pattern against each request, and with a few hundred routes that was a
// visible share of a cached entitlement lookup's CPU. Within a group the routes keep their order (a static path
// before the `{id}` that would also match it). A path of no group is left to the 404 downstream, as the one router
// left it; a method no route implements (PROPFIND) is a 405 with our error body, not the router's 501.
import Router from '@koa/router'
import type { Middleware } from 'koa'
import { AppError } from '../core/errors.ts'
import { mountRoutes, type MountOptions, type Route } from './route.ts'

/** The first two segments of a path, lowercased: the router matches paths case-insensitively, with or without a trailing slash. */
function groupOf(path: string): string {
  const second = path.indexOf('/', 1)
  const third = second < 0 ? -1 : path.indexOf('/', second + 1)
  return (third < 0 ? path : path.slice(0, third)).toLowerCase()
}

const methodNotAllowed = () => new AppError('invalid_operation', 'method not allowed on this path', {}, { status: 405 })

export function routeGroups(routes: Route[], options: MountOptions): Middleware {
  const byGroup = new Map<string, Route[]>()
  for (const route of routes) {
    const group = groupOf(route.path)
    if (group.includes('{')) throw new Error(`route ${route.method} ${route.path}: its first two path segments must be fixed to be grouped`)
    byGroup.set(group, [...(byGroup.get(group) ?? []), route])
  }
  const groups = new Map<string, { routes: Middleware; allowed: Middleware }>()
  for (const [group, grouped] of byGroup) {
    const router = new Router()
    mountRoutes(router, grouped, options)
    groups.set(group, { routes: router.routes() as Middleware, allowed: router.allowedMethods({ throw: true, notImplemented: methodNotAllowed }) as Middleware })
  }
  return (ctx, next) => {
    const group = groups.get(groupOf(ctx.path))
    return group ? group.routes(ctx, () => group.allowed(ctx, next)) : next()
  }
}
