// Serves the customer portal's page at /portal/ (the link a portal session answers, its token in the fragment).
// Its modules, styles and libraries are the console's static files (console/portal/, served under /console/);
// this page gets the console's strict Content-Security-Policy, computed from its own import map, and is never
// cached or framed. Served where the console is: the `api` role.
import { send } from '@koa/send'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Middleware } from 'koa'
import { contentSecurityPolicy } from './console.ts'

const PAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'console', 'portal')

export function portalPageMiddleware(options: { routes: readonly { method: string; path: string }[] }): Middleware {
  const enabled = options.routes.some((r) => r.method === 'GET' && r.path === '/v1/customer/portal/info')
  const csp = contentSecurityPolicy(readFileSync(join(PAGE_ROOT, 'index.html'), 'utf8'))
  return async (ctx, next) => {
    if (!enabled || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next()
    // A redirect keeps the link's fragment (the token): browsers carry it over.
    if (ctx.path === '/portal') return ctx.redirect('/portal/')
    if (ctx.path !== '/portal/') return next()
    ctx.set('Content-Security-Policy', csp)
    ctx.set('X-Content-Type-Options', 'nosniff')
    ctx.set('Referrer-Policy', 'no-referrer')
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin')
    ctx.set('Cache-Control', 'no-store')
    await send(ctx, 'index.html', { root: PAGE_ROOT })
  }
}
