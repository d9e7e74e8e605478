// Serves the web console: static files from `console/` and a short allow-list of browser builds from
// node_modules, under /console/ (and `/` redirects there). Nothing here reads data: the console calls
// the public API with the key pasted into it. Every console response carries a strict
// Content-Security-Policy; the only inline script allowed is the import map, by its hash.
import { send } from '@koa/send'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Middleware } from 'koa'

const HERE = dirname(fileURLToPath(import.meta.url))
const CONSOLE_ROOT = join(HERE, '..', 'console')

/**
 * The library files the console loads, by the name it asks for: never the whole node_modules.
 * Each is the package's own browser-ready ES module (or CSS), served as published.
 */
const VENDOR: Record<string, { pkg: string; file: string }> = {
  'preact.mjs': { pkg: 'preact', file: 'dist/preact.mjs' },
  'hooks.mjs': { pkg: 'preact', file: 'hooks/dist/hooks.mjs' },
  'htm.mjs': { pkg: 'htm', file: 'dist/htm.mjs' },
  'uPlot.esm.js': { pkg: 'uplot', file: 'dist/uPlot.esm.js' },
  'uPlot.min.css': { pkg: 'uplot', file: 'dist/uPlot.min.css' },
  'decimal.mjs': { pkg: 'decimal.js', file: 'decimal.mjs' },
}

/** The console's own files by extension: anything else under console/ (a stray note, a map) is not served. */
const SERVED = /\.(html|js|css|png|svg)$/

/** Where Node would find a package from here: the nearest node_modules up the tree holding it. */
function packageDir(pkg: string): string {
  for (let dir = HERE; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', pkg)
    if (existsSync(join(candidate, 'package.json'))) return candidate
    if (dirname(dir) === dir) throw new Error(`console: package ${pkg} is not installed (npm ci)`)
  }
}

/**
 * The policy: scripts and styles from this origin only (plus the import map by hash: browsers have no
 * external import maps, and a hash keeps 'unsafe-inline' out), API calls to this origin only, images
 * also from blob: and data: (uPlot draws on canvas; a PDF or CSV is handed over as a blob: URL).
 */
export function contentSecurityPolicy(indexHtml: string): string {
  const map = /<script type="importmap">([\s\S]*?)<\/script>/.exec(indexHtml)
  const hash = map ? ` 'sha256-${createHash('sha256').update(map[1]).digest('base64')}'` : ''
  return [
    "default-src 'none'",
    `script-src 'self'${hash}`,
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

export interface ConsoleOptions {
  /**
   * The routes this process serves: the console is served only where the API it calls is (the
   * `api` role), recognized by the sign-in check it makes, GET /v1/environments. An ingest-only process
   * serves no console.
   */
  routes: readonly { method: string; path: string }[]
  /** The console's folder; the project's `console/` by default. */
  root?: string
}

export function consoleMiddleware(options: ConsoleOptions): Middleware {
  const enabled = options.routes.some((r) => r.method === 'GET' && r.path === '/v1/environments')
  const root = options.root ?? CONSOLE_ROOT
  const vendor = new Map(Object.entries(VENDOR).map(([name, v]) => [name, join(packageDir(v.pkg), v.file)]))
  const csp = contentSecurityPolicy(readFileSync(join(root, 'index.html'), 'utf8'))

  return async (ctx, next) => {
    if (!enabled || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next()
    if (ctx.path === '/' || ctx.path === '/console') return ctx.redirect('/console/')
    if (!ctx.path.startsWith('/console/')) return next()

    ctx.set('Content-Security-Policy', csp)
    ctx.set('X-Content-Type-Options', 'nosniff')
    ctx.set('Referrer-Policy', 'no-referrer')
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin')
    const rest = ctx.path.slice('/console/'.length)
    if (rest === '' || rest === 'index.html') {
      // Always revalidated: a new release's index names the same module paths.
      ctx.set('Cache-Control', 'no-cache')
      await send(ctx, 'index.html', { root })
      return
    }
    if (rest.startsWith('vendor/')) {
      const file = vendor.get(rest.slice('vendor/'.length))
      if (!file) return next()
      ctx.set('Cache-Control', 'no-cache')
      await send(ctx, file.slice(dirname(file).length + 1), { root: dirname(file) })
      return
    }
    // @koa/send resolves the path inside root (no `..` escapes) and skips dotfiles.
    if (!SERVED.test(rest)) return next()
    ctx.set('Cache-Control', 'no-cache')
    await send(ctx, rest, { root })
  }
}
