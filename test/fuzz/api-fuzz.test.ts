// A property-based fuzz of every operation in the OpenAPI document, sent over HTTP as an outsider would:
// malformed JSON, wrong types per field, missing fields, 100 KB strings, deep nesting, lone surrogates and
// NUL bytes, huge, negative and unrepresentable numbers, impossible dates, bad path ids, bad list
// parameters, wrong content types and bodies over the size limit. Every answer must be below 500, every
// 4xx must carry the error body (a 400 naming a field), and an operation whose requests all failed must
// have written nothing. Seeded and bounded for CI; FUZZ_RUNS=<n> (and FUZZ_SEED) runs longer.
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../harness.ts'
import { eventLogOf } from '../../infra/event-log.ts'
import { buildWorld, concretePath, rowCounts, sampleBodies, type World } from '../api-world.ts'

const RUNS = Number(process.env.FUZZ_RUNS ?? 6)
const SEED = Number(process.env.FUZZ_SEED ?? 20260219)
const LONG = process.env.FUZZ_RUNS !== undefined

let h: Harness
let w: World
let doc: { paths: Record<string, Record<string, Operation>> }

interface Operation {
  parameters?: { name: string; in: string; schema: Schema }[]
  requestBody?: { content: { 'application/json': { schema: Schema } } }
}
type Schema = Record<string, any>

beforeAll(async () => {
  h = await startHarness({ env: { RATE_LIMIT_PER_SECOND: '1000000', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  w = await buildWorld(h)
  doc = (await h.http('GET', '/v1/openapi.json', { key: null })).body
})
afterAll(() => h?.stop())

// ---- what is sent ------------------------------------------------------------------------------------------

/** One request. `raw` is the body text as sent (numbers JSON cannot hold, broken JSON); `json` is encoded. */
interface Case {
  label: string
  path: string
  query?: string
  json?: unknown
  raw?: string
  contentType?: string
}

/** A value JSON.stringify cannot write (1e309, a 100,000-digit number): spliced into the text as is. */
class RawNumber {
  constructor(readonly text: string) {}
}

function encode(value: unknown): string {
  const raws: string[] = []
  const text = JSON.stringify(value, (_, v) => {
    if (v instanceof RawNumber) {
      raws.push(v.text)
      return `\u0001raw${raws.length - 1}\u0001`
    }
    return v
  })
  return text.replace(/"\u0001raw(\d+)\u0001"/g, (_, i: string) => raws[Number(i)])
}

const big = (n: number) => 'x'.repeat(n)
const deep = (levels: number): unknown => {
  let v: unknown = 'leaf'
  for (let i = 0; i < levels; i++) v = { a: v }
  return v
}

/** Values that are wrong, or right but hostile, for any field. */
const NASTY: unknown[] = [
  0,
  -1,
  1.5,
  true,
  null,
  [],
  {},
  'text',
  '',
  big(100_000),
  'nul\u0000byte',
  'lone \ud800 surrogate',
  '\udc00',
  '😀'.repeat(300),
  "' OR 1=1 --",
  new RawNumber('1e309'),
  new RawNumber('-1e309'),
  new RawNumber('1e20'),
  new RawNumber('-99999999999999999999999'),
  new RawNumber('9'.repeat(100_000)),
  '1e309',
  '9'.repeat(100_000),
  '0.' + '0'.repeat(60) + '1',
  '-1',
  'NaN',
  '-0',
  '2026-02-30T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '2026-02-30',
  Array.from({ length: 10_000 }, (_, i) => i),
  Array.from({ length: 2_000 }, () => 'x'),
  Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, 'v'])),
  deep(200),
  { nested: { nul: 'a\u0000' } },
]

/** What every field of a sample gets in turn: wrong types, oversized, ill-formed, unrepresentable, impossible. */
const FIELD_VALUES: unknown[] = [42, 'text', null, big(100_000), 'a\u0000b', '\ud800', new RawNumber('1e309'), '9'.repeat(100_000), '2026-02-30T00:00:00Z', deep(100), -1, {}, [], '-1']

/** Path parameters no record can have. */
const BAD_IDS = ['%00', 'a%00b', '%ED%A0%80', '%F0%9F%92%A9', big(8_000), "'%3B--", '..%2F..', '-1', '1e309', '%20', 'null', 'cus_' + '0'.repeat(32)]

/** Query values: wrong types, out of range, unrepresentable, hostile. */
const BAD_QUERY = ['-1', '1e20', '1e309', '-1e309', 'abc', '', '1.5', '9'.repeat(400), big(8_000), '%00', '%ED%A0%80', '2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', 'true', 'null', '[]']

/** Bodies that are not the JSON object asked for. */
const BAD_BODIES: { label: string; raw: string; contentType?: string }[] = [
  { label: 'truncated JSON', raw: '{"a": ' },
  { label: 'unclosed object', raw: '{' },
  { label: 'trailing garbage', raw: '{"a":1}xyz' },
  { label: 'array', raw: '[]' },
  { label: 'null', raw: 'null' },
  { label: 'string', raw: '"text"' },
  { label: 'number 1e309', raw: '1e309' },
  { label: 'NaN', raw: 'NaN' },
  { label: 'BOM', raw: '\ufeff{}' },
  { label: 'lone surrogate escape', raw: '{"name":"\\ud800"}' },
  { label: 'NUL escape in a key', raw: '{"\\u0000":"x"}' },
  { label: '__proto__', raw: '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}' },
  { label: '10k-deep arrays', raw: '['.repeat(10_000) + ']'.repeat(10_000) },
  { label: '10k-deep objects', raw: '{"metadata":'.repeat(10_000) + '{}' + '}'.repeat(10_000) },
  { label: 'form encoded', raw: 'name=x&currency=USD', contentType: 'application/x-www-form-urlencoded' },
  { label: 'text/plain JSON', raw: '{}', contentType: 'text/plain' },
  { label: 'multipart', raw: '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--', contentType: 'multipart/form-data; boundary=b' },
  { label: 'invalid UTF-8 charset', raw: '{}', contentType: 'application/json; charset=utf-7' },
]

type Path = (string | number)[]

let turn = 0
/** In CI each field, parameter and path gets `n` of the hostile values, taking turns so all are sent; a long run sends all. */
function some<T>(values: T[], n: number): T[] {
  if (LONG || values.length <= n) return values
  const start = turn++ % values.length
  return Array.from({ length: n }, (_, i) => values[(start + i) % values.length])
}

/** Every place a value sits in `value` (containers too), and the schema's properties the sample left out. */
function fieldPaths(value: unknown, schema: Schema | undefined, at: Path = []): Path[] {
  const out: Path[] = at.length > 0 ? [at] : []
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...fieldPaths(v, schema?.items, [...at, i])))
  else if (value && typeof value === 'object') {
    const props = (schema?.properties ?? {}) as Record<string, Schema>
    for (const [k, v] of Object.entries(value)) out.push(...fieldPaths(v, props[k], [...at, k]))
    for (const k of Object.keys(props)) if (!(k in value)) out.push([...at, k])
  }
  return out
}

function setAt(body: unknown, path: Path, value: unknown): unknown {
  const copy = structuredClone(body) as any
  let node = copy
  for (const key of path.slice(0, -1)) node = node[key]
  if (value === undefined) delete node[path[path.length - 1]]
  else node[path[path.length - 1]] = value
  return copy
}

const label = (path: Path) => path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('').slice(1)
const describeValue = (v: unknown): string => {
  if (v instanceof RawNumber) return `raw ${v.text.slice(0, 20)}${v.text.length > 20 ? `…(${v.text.length})` : ''}`
  const s = JSON.stringify(v) ?? String(v)
  return s.length > 40 ? `${s.slice(0, 40)}…(${s.length})` : s
}

/** Strings that could hold an unknown id, with the world's values in the other path parameters. */
function pathCases(path: string): Case[] {
  const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
  const real = concretePath(w, path)
  return params.flatMap((param) =>
    some(BAD_IDS, 4).map((bad) => ({ label: `path ${param}=${bad.slice(0, 20)}`, path: path.replace(/\{(\w+)\}/g, (m, p: string) => (p === param ? bad : real.split('/')[path.split('/').indexOf(m)])) })),
  )
}

function queryCases(path: string, params: { name: string; schema: Schema }[]): Case[] {
  const at = concretePath(w, path)
  const cases: Case[] = [
    { label: 'limit=-1', path: at, query: 'limit=-1' },
    { label: 'offset=1e20', path: at, query: 'offset=1e20' },
    { label: 'unknown parameter', path: at, query: 'no_such_param=1' },
    { label: 'metadata with NUL', path: at, query: 'metadata[a%00]=b%00' },
    { label: 'repeated limit', path: at, query: 'limit=1&limit=2' },
  ]
  for (const p of params) {
    const name = p.name === 'metadata[key]' ? 'metadata[k]' : p.name
    for (const bad of some(BAD_QUERY, 4)) cases.push({ label: `${name}=${bad.slice(0, 20)}`, path: at, query: `${encodeURIComponent(name).replace(/%5B/g, '[').replace(/%5D/g, ']')}=${bad}` })
  }
  return cases
}

function bodyCases(path: string, samples: Record<string, unknown>[], schema: Schema): Case[] {
  const at = concretePath(w, path)
  const cases: Case[] = some(BAD_BODIES, 8).map((b) => ({ label: b.label, path: at, raw: b.raw, contentType: b.contentType }))
  for (const sample of samples) {
    for (const field of fieldPaths(sample, schema)) {
      // A few kinds for every field, the rest by the property below.
      for (const v of some(FIELD_VALUES, 3)) {
        cases.push({ label: `${label(field)}=${describeValue(v)}`, path: at, json: setAt(sample, field, v) })
      }
    }
    for (const required of (schema.required as string[] | undefined) ?? []) cases.push({ label: `without ${required}`, path: at, json: setAt(sample, [required], undefined) })
  }
  return cases
}

// ---- what is checked ----------------------------------------------------------------------------------------

interface Outcome {
  status: number
  body: any
}

async function send(method: string, c: Case): Promise<Outcome> {
  const headers: Record<string, string> = { 'x-api-key': h.key }
  let body: string | undefined = c.raw
  if (c.json !== undefined) body = encode(c.json)
  if (body !== undefined) headers['content-type'] = c.contentType ?? 'application/json'
  const res = await fetch(`${h.baseUrl}${c.path}${c.query ? `?${c.query}` : ''}`, { method, headers, body })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // reported below: a 4xx without a JSON body fails the check
  }
  return { status: res.status, body: parsed }
}

/** Why an answer breaks the rules, or undefined when it keeps them. */
function breach(o: Outcome): string | undefined {
  if (o.status >= 500) return `${o.status} ${JSON.stringify(o.body).slice(0, 300)}`
  if (o.status >= 400) {
    const b = o.body
    if (!b || typeof b !== 'object' || typeof b.code !== 'string' || typeof b.message !== 'string' || b.http_status_code !== o.status || typeof b.details !== 'object' || b.details === null) {
      return `${o.status} without the error body: ${JSON.stringify(o.body).slice(0, 200)}`
    }
    if (o.status === 400 && Object.keys(b.details).length === 0) return `400 naming no field: ${b.message}`
  }
  return undefined
}

interface OpRun {
  breaches: string[]
  succeeded: number
  sent: number
}

async function check(method: string, c: Case, run: OpRun): Promise<void> {
  const o = await send(method, c)
  run.sent++
  if (o.status < 300) run.succeeded++
  const why = breach(o)
  if (why) run.breaches.push(`${method} ${c.path.slice(0, 80)}${c.query ? `?${c.query.slice(0, 60)}` : ''} [${c.label}] → ${why}`)
}

/** fast-check picks fields and hostile values, one to three at a time, over the operation's samples. */
function randomBodies(samples: Record<string, unknown>[], schema: Schema): fc.Arbitrary<unknown> {
  return fc
    .constantFrom(...samples)
    .chain((sample) => {
      // A body with no fields (a record's DELETE) is fuzzed with one it must refuse.
      const fields = fieldPaths(sample, schema)
      if (fields.length === 0) fields.push(['end_date'])
      const change = fc.tuple(fc.constantFrom(...fields), fc.oneof(fc.constantFrom(...NASTY), fc.jsonValue({ maxDepth: 3 }), fc.string({ unit: 'binary', maxLength: 40 })))
      return fc.array(change, { minLength: 1, maxLength: 3 }).map((changes) => {
        let body: unknown = sample
        for (const [field, value] of changes) {
          try {
            body = setAt(body, field, value)
          } catch {
            // an earlier change replaced this field's parent: leave it
          }
        }
        return body
      })
    })
}

function operations(): { method: string; path: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })))
}

describe('fuzz of every operation', () => {
  it('covers every operation of the OpenAPI document, each write with a sample body', () => {
    const ops = operations()
    expect(ops.length).toBeGreaterThanOrEqual(160)
    const samples = sampleBodies(w)
    const missing = ops.filter(({ method, path, op }) => op.requestBody && !samples[`${method} ${path}`]).map(({ method, path }) => `${method} ${path}`)
    expect(missing).toEqual([])
  })

  it('answers malformed requests to every operation with a 4xx and the error body, and writes nothing', async () => {
    const samples = sampleBodies(w)
    const breaches: string[] = []
    const wrote: string[] = []
    let before = await rowCounts(h)
    let sent = 0
    let index = 0
    for (const { method, path, op } of operations()) {
      // Events an intake operation accepted are stored first: a route that reads usage would otherwise wait for them
      // and, on a loaded CI machine, answer 503 after 5 s (http/route.ts), which is load, not the input's answer.
      expect(await eventLogOf(h.running.deps)?.settled(60_000)).not.toBe(false)
      const run: OpRun = { breaches: [], succeeded: 0, sent: 0 }
      const t0 = performance.now()
      const query = (op.parameters ?? []).filter((p) => p.in === 'query')
      const schema = op.requestBody?.content['application/json'].schema
      const bodies = samples[`${method} ${path}`]
      const cases: Case[] = [...pathCases(path)]
      if (query.length > 0) cases.push(...queryCases(path, query))
      if (schema && bodies) cases.push(...bodyCases(path, bodies, schema))
      else if (method !== 'GET') {
        // A route without a body still meets broken ones; an unknown id keeps a valid one from acting.
        const unknown = path.replace(/\{(\w+)\}/g, 'unknown_id')
        for (const b of some(BAD_BODIES, 6)) cases.push({ label: b.label, path: path.includes('{') ? unknown : path, raw: b.raw, contentType: b.contentType })
      }
      // Bodies over the 5 MiB limit: every eighth operation with a body, all of them in a long run.
      if (schema && (LONG || index++ % 8 === 0)) cases.push({ label: '6 MiB body', path: concretePath(w, path), raw: JSON.stringify({ name: big(6 * 1024 * 1024) }) })
      for (const c of cases) await check(method, c, run)

      if (schema && bodies) {
        const at = concretePath(w, path)
        try {
          await fc.assert(
            fc.asyncProperty(randomBodies(bodies, schema), async (json) => {
              const o = await send(method, { label: 'random', path: at, json })
              run.sent++
              if (o.status < 300) run.succeeded++
              const why = breach(o)
              if (why) throw new Error(why)
            }),
            { seed: SEED, numRuns: RUNS, endOnFailure: !LONG },
          )
        } catch (err) {
          // fast-check's message names the counterexample; the answer that broke the rules is its cause.
          const e = err as Error
          run.breaches.push(`${method} ${path} [fast-check] ${e.message.split('\n').slice(0, 3).join(' | ')} → ${(e.cause as Error | undefined)?.message ?? ''}`)
        }
      }
      sent += run.sent
      if (process.env.FUZZ_PROFILE) console.log(`PROFILE ${Math.round(performance.now() - t0)} ms ${run.sent} ${method} ${path}`)
      breaches.push(...run.breaches)
      // Requests that all failed must have left every table as it was (a GET writes nothing in any case).
      if (method !== 'GET') {
        const after = await rowCounts(h)
        const changed = Object.keys(after).filter((t) => after[t] !== before[t])
        if (run.succeeded === 0 && changed.length > 0) wrote.push(`${method} ${path}: ${changed.map((t) => `${t} ${before[t]}→${after[t]}`).join(', ')}`)
        before = after
      }
    }
    console.log(`fuzz: ${sent} requests over ${operations().length} operations, seed ${SEED}, ${RUNS} random bodies each`)
    expect(breaches.slice(0, 200)).toEqual([])
    expect(wrote).toEqual([])
    // The service is still up and answering.
    expect((await h.http('GET', '/v1/health', { key: null })).status).toBe(200)
  }, 600_000)
})

