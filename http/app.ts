// The Koa app factory: tests build exactly the app that the CLI serves.
import { bodyParser } from '@koa/bodyparser'
import Koa from 'koa'
import { randomUUID } from 'node:crypto'
import type { Deps } from '../infra/deps.ts'
import { errorHandler } from './errors.ts'
import { RateLimiter } from './rate-limit.ts'
import type { Route } from './route.ts'
import { routeGroups } from './route-groups.ts'
import { healthRoutes } from './routes/health.ts'
import { openApiRoutes } from './routes/openapi.ts'
import { consoleMiddleware } from './console.ts'
import { portalPageMiddleware } from './portal-page.ts'
import { discardUnread } from './unread-body.ts'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

export function createApp(deps: Deps, roleRoutes: Route[]): Koa {
  const app = new Koa({ proxy: true })
  // What reaches here happened after the response began (the error handler answers the rest): a client that left
  // mid-response (a streamed export) is routine, anything else is logged. Koa's default prints to stderr.
  app.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ERR_STREAM_PREMATURE_CLOSE') deps.logger.debug({ err }, 'client left mid-response')
    else deps.logger.warn({ err }, 'error after the response began')
  })
  const routes: Route[] = [...healthRoutes, ...roleRoutes]
  routes.push(...openApiRoutes(() => routes))

  app.use(async (ctx, next) => {
    const given = ctx.get('x-request-id')
    ctx.state.requestId = REQUEST_ID.test(given) ? given : randomUUID()
    ctx.set('x-request-id', ctx.state.requestId as string)
    await next()
  })
  // Outside the error handler, so the status is the one sent; the route template keeps the label set small.
  app.use(async (ctx, next) => {
    const timer = deps.metrics.httpSeconds.startTimer()
    try {
      await next()
    } finally {
      const route = (ctx as { _matchedRoute?: string })._matchedRoute
      timer({ route: typeof route === 'string' ? route : 'unmatched', method: ctx.method, status: String(ctx.status) })
    }
  })
  // After the error handler answered: a body refused unread is drained before the answer goes (http/unread-body.ts).
  app.use(async (ctx, next) => {
    await next()
    if (!ctx.req.complete) await discardUnread(ctx.req)
  })
  app.use(errorHandler(deps.logger))
  app.use(consoleMiddleware({ routes }))
  app.use(portalPageMiddleware({ routes }))
  app.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: deps.config.maxBodyBytes,
      // Any body is read as JSON, so `curl -d` without a content type gets a clear answer, not an empty body.
      detectJSON: () => true,
      encoding: 'utf-8',
      // DELETE too: Flexprice's clients name what to remove in the body (DELETE /v1/subscriptions/addon).
      parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
    }),
  )
  app.use(routeGroups(routes, { deps, limiter: new RateLimiter(deps.config.rateLimitPerSecond) }))
  return app
}
