// docs/compatibility.md's matrix, regenerated: `npm run compat`. The SDK's operations (from @flexprice/sdk's own
// generated source), whether each reaches a route declared here, and the counts are computed; each row's status and
// notes are the page's, kept as written. Whether the SDK suite (test/sdk/*.test.ts) calls a method is computed too. A row whose status contradicts the routes is refused, never rewritten:
// a method that reaches a route cannot be "not yet", one that reaches none cannot be supported or differ.
// test/compatibility.test.ts fails when the committed page differs from what this writes.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { apiRoutes } from '../http/api-routes.ts'
import { healthRoutes } from '../http/routes/health.ts'
import { ingestRoutes } from '../http/routes/intake.ts'
import type { Route } from '../http/route.ts'

const ROOT = join(import.meta.dirname, '..')
const PAGE = join(ROOT, 'docs/compatibility.md')
const SDK = join(ROOT, 'node_modules/@flexprice/sdk/src')
const SDK_SUITE = join(ROOT, 'test/sdk')
/** The SDK's paths are relative to its server address, which ends in /v1 (as Flexprice's cloud's does). */
const SERVER_PREFIX = '/v1'

const STATUSES = ['supported', 'differs', 'not yet', 'not offered', 'removed'] as const
type Status = (typeof STATUSES)[number]
/** What a caller gets: these need a route, "not yet" must have none; "not offered" and "removed" may answer either way. */
const WORKS: readonly Status[] = ['supported', 'differs']
const VERBS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

interface Operation {
  group: string
  method: string
  verb: string
  /** As the SDK sends it, relative to the server's host (`/v1` included). */
  path: string
}

interface Row {
  status: Status
  notes: string
}

const read = (path: string): string => readFileSync(path, 'utf8')
const all = (re: RegExp, text: string): RegExpExecArray[] => [...text.matchAll(re)]

/** Every operation the SDK's client offers, `flexprice.<group>.<method>()`, with the request it sends. */
function sdkOperations(): Operation[] {
  const classes = new Map<string, string>()
  for (const [, group, cls] of all(/get (\w+)\(\): (\w+) \{/g, read(join(SDK, 'sdk/sdk.ts')))) classes.set(cls, group)
  const ops: Operation[] = []
  for (const file of readdirSync(join(SDK, 'sdk')).filter((f) => f.endsWith('.ts'))) {
    const text = read(join(SDK, 'sdk', file))
    const cls = /export class (\w+) extends ClientSDK/.exec(text)?.[1]
    const group = cls && classes.get(cls)
    if (!group) continue
    const funcs = new Map(all(/import \{ (\w+) \} from "\.\.\/funcs\/([\w-]+)\.js"/g, text).map(([, fn, f]) => [fn, f]))
    for (const [, method, fn] of all(/async (\w+)\([\s\S]*?unwrapAsync\((\w+)\(/g, text)) {
      const source = read(join(SDK, 'funcs', `${funcs.get(fn)}.ts`))
      const path = /pathToFunc\("([^"]+)"\)/.exec(source)?.[1]
      const verb = /method: "([A-Z]+)"/.exec(source)?.[1]
      if (!path || !verb) throw new Error(`@flexprice/sdk: no path or method found for ${group}.${method} (funcs/${funcs.get(fn)}.ts)`)
      ops.push({ group, method, verb, path: SERVER_PREFIX + path })
    }
  }
  return ops
}

/** The methods the SDK suite calls (`.createCustomer(`), each with the test files calling it (`test/sdk/<name>.test.ts`): each call is a round trip through the SDK, answer parsed by its models. */
function drivenMethods(): Map<string, string[]> {
  const callers = new Map<string, string[]>()
  for (const file of readdirSync(SDK_SUITE).filter((f) => f.endsWith('.test.ts')).sort()) {
    for (const name of new Set(all(/\.(\w+)\(/g, read(join(SDK_SUITE, file))).map(([, n]) => n))) callers.set(name, [...(callers.get(name) ?? []), `test/sdk/${file}`])
  }
  return callers
}

const segments = (path: string): string[] => path.split('/').filter(Boolean)
const isParam = (segment: string): boolean => /^\{\w+\}$|^:\w+$/.test(segment)

/** The summary's generated line: the groups with methods not yet offered, and how many. */
const NOT_YET_LINE = 'Not yet offered, by group:'
/** The summary's other generated line: the methods that work and that the SDK suite calls. */
const ROUND_TRIP_LINE = 'Round trips through the SDK'

const RECORD_ID = /^(\{id\}|:id)$/

/**
 * The route the SDK's request reaches: the first, in the order they are mounted (the router's order), of the same verb
 * whose segments take the request's, parameter names aside (`{id}`, `:id`). A route's parameter takes a literal segment
 * of the SDK's path too (`/v1/webhooks/{provider}/…` takes `stripe`), but a record's `{id}` taking one is the wrong
 * route (`GET /v1/prices/units` is not the price with id "units"): then the request reaches no route of its own, and
 * if one is mounted after that `{id}` it is shadowed, which is refused.
 */
function routeOf(routes: Pick<Route, 'method' | 'path'>[], op: Operation): { reached: boolean; shadowed?: string } {
  const wanted = segments(op.path)
  const matching = routes.filter((route) => {
    const declared = segments(route.path)
    return route.method === op.verb && declared.length === wanted.length && declared.every((s, i) => s === wanted[i] || isParam(s))
  })
  const own = (route: Pick<Route, 'path'>): boolean => segments(route.path).every((s, i) => !RECORD_ID.test(s) || isParam(wanted[i]))
  const first = matching[0]
  if (!first || own(first)) return { reached: Boolean(first) }
  const later = matching.find(own)
  return { reached: false, shadowed: later && `${first.method} ${first.path} is mounted before ${later.path} and takes its requests: mount the fixed path first` }
}

/** The routes `npm start` serves (every role), in the order they are mounted. */
export const servedRoutes = (): Route[] => [...healthRoutes, ...apiRoutes, ...ingestRoutes]

const cells = (line: string): string[] => line.replace(/^\|\s?/, '').replace(/\s?\|\s*$/, '').split(' | ')
const unquote = (cell: string): string => cell.replace(/^`|`$/g, '').replace(/^\*\*|\*\*$/g, '').trim()

interface Group {
  heading: string
  /** Text between the heading and the table, and after the table, kept as written. */
  before: string[]
  after: string[]
}

interface Page {
  preamble: string[]
  summaryAfter: string[]
  methodsIntro: string[]
  groups: Map<string, Group>
  rows: Map<string, Row>
}

/** The page as written: its prose, each group's heading text, and each row's status and notes by method. */
function parse(page: string): Page {
  const lines = page.replace(/\n+$/, '').split('\n')
  const summary = lines.indexOf('## Summary')
  const methods = lines.indexOf('## Method by method')
  if (summary < 0 || methods < summary) throw new Error('docs/compatibility.md: "## Summary" and then "## Method by method" are expected')
  const firstGroup = lines.findIndex((l, i) => i > methods && l.startsWith('### '))
  const sections = lines.slice(firstGroup < 0 ? lines.length : firstGroup)
  const summaryText = lines.slice(summary + 1, methods)
  const parsed: Page = {
    preamble: lines.slice(0, summary),
    summaryAfter: summaryText.slice(summaryText.findLastIndex((l) => l.startsWith('|')) + 1).filter((l) => !l.startsWith(NOT_YET_LINE) && !l.startsWith(ROUND_TRIP_LINE)).join('\n').replace(/^\n+/, '').split('\n'),
    methodsIntro: lines.slice(methods + 1, firstGroup < 0 ? lines.length : firstGroup),
    groups: new Map(),
    rows: new Map(),
  }
  let group: Group | undefined
  let table: string[] | undefined
  for (const line of sections) {
    const heading = /^### (\w+)/.exec(line)
    if (heading) {
      group = { heading: heading[1], before: [], after: [] }
      table = undefined
      parsed.groups.set(group.heading, group)
    } else if (line.startsWith('|')) {
      const row = cells(line)
      if (!table) table = row.map((c) => c.trim())
      else if (!/^-+$/.test(row[0].trim())) readRow(parsed, table, row)
    } else (table ? group!.after : group!.before).push(line)
  }
  return parsed
}

function readRow(page: Page, header: string[], row: string[]): void {
  const method = unquote(row[0])
  const col = (name: string): number => header.indexOf(name)
  const status = unquote(row[col('status')] ?? '') as Status
  if (!STATUSES.includes(status)) throw new Error(`docs/compatibility.md: ${method} has status "${status}"; use one of ${STATUSES.join(', ')}`)
  if (page.rows.has(method)) throw new Error(`docs/compatibility.md: ${method} has two rows; keep one`)
  page.rows.set(method, { status, notes: row.slice(col('notes')).join(' | ').trim() })
}

const byRequest = (a: Operation, b: Operation): number => (a.path < b.path ? -1 : a.path > b.path ? 1 : VERBS.indexOf(a.verb) - VERBS.indexOf(b.verb))
const percent = (n: number, of: number): string => `${Math.round((100 * n) / of)}%`

/** The page with its generated parts recomputed from the SDK and the routes; throws on a row that contradicts them or names no SDK method. */
export function compatibilityPage(page: string, routes: Pick<Route, 'method' | 'path'>[] = servedRoutes()): string {
  const { preamble, summaryAfter, methodsIntro, groups, rows } = parse(page)
  const ops = sdkOperations()
  const driven = drivenMethods()
  const known = new Set(ops.map((o) => o.method))
  const stray = [...rows.keys()].filter((m) => !known.has(m))
  if (stray.length) throw new Error(`docs/compatibility.md: rows for methods @flexprice/sdk does not have: ${stray.join(', ')}`)

  const problems: string[] = []
  const entries = ops.map((op) => {
    const { reached: routed, shadowed } = routeOf(routes, op)
    if (shadowed) problems.push(`${op.method} (${op.verb} ${op.path}): ${shadowed}`)
    const row = rows.get(op.method) ?? { status: 'not yet', notes: '' }
    if (routed && row.status === 'not yet') problems.push(`${op.method} (${op.verb} ${op.path}) reaches a route but says "not yet": mark it supported or differs (with the difference)`)
    if (!routed && !rows.has(op.method)) problems.push(`${op.method} (${op.verb} ${op.path}) has no row: add one with its status`)
    if (!routed && WORKS.includes(row.status)) problems.push(`${op.method} (${op.verb} ${op.path}) reaches no route but says "${row.status}"`)
    return { op, routed, row }
  })
  if (problems.length) throw new Error(`docs/compatibility.md contradicts the routes:\n- ${problems.join('\n- ')}`)

  const order = [...groups.keys(), ...new Set(ops.map((o) => o.group))].filter((g, i, a) => a.indexOf(g) === i && ops.some((o) => o.group === g))
  const out = [...preamble, '## Summary', '', '| status | methods | reach a route | called by the SDK suite |', '| --- | --- | --- | --- |']
  for (const status of STATUSES) {
    const these = entries.filter((e) => e.row.status === status)
    if (these.length) out.push(`| ${status} | ${these.length} | ${these.filter((e) => e.routed).length} | ${these.filter((e) => driven.has(e.op.method)).length} |`)
  }
  const routed = entries.filter((e) => e.routed).length
  const roundTrips = entries.filter((e) => WORKS.includes(e.row.status) && driven.has(e.op.method)).length
  out.push(`| **all** | **${entries.length}** | **${routed} (${percent(routed, entries.length)})** | **${entries.filter((e) => driven.has(e.op.method)).length}** |`)
  out.push('', `${ROUND_TRIP_LINE} (supported or differs, and called by the suite): **${roundTrips} of ${entries.length} (${percent(roundTrips, entries.length)})**.`)
  const notYet = new Map<string, number>()
  for (const e of entries) if (e.row.status === 'not yet') notYet.set(e.op.group, (notYet.get(e.op.group) ?? 0) + 1)
  const byCount = [...notYet].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1)).map(([group, n]) => `${group} ${n}`)
  out.push('', `${NOT_YET_LINE} ${byCount.join(', ') || 'none'}.`, '', ...summaryAfter, '## Method by method', ...methodsIntro)
  for (const name of order) {
    const group = groups.get(name) ?? { heading: name, before: [''], after: [''] }
    const these = entries.filter((e) => e.op.group === name).sort((a, b) => byRequest(a.op, b.op))
    const working = these.filter((e) => WORKS.includes(e.row.status)).length
    out.push(`### ${name} (${working} of ${these.length})`, ...group.before)
    out.push('| method | request | reaches a route | SDK suite | status | notes |', '| --- | --- | --- | --- | --- | --- |')
    for (const { op, routed: r, row } of these) {
      const status = row.status === 'differs' ? '**differs**' : row.status
      out.push(`| \`${op.method}\` | \`${op.verb} ${op.path}\` | ${r ? 'yes' : 'no'} | ${driven.get(op.method)?.map((f) => f.replace(/^test\/sdk\/|\.test\.ts$/g, '')).join(', ') ?? 'no'} | ${status} | ${row.notes} |`)
    }
    out.push(...group.after)
  }
  return `${out.join('\n').replace(/\n+$/, '')}\n`
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(PAGE, compatibilityPage(read(PAGE)))
  console.log('docs/compatibility.md regenerated')
}
