// ClickHouse SQL of the batch writer: which event ids are already stored, and the one insert per batch.
import type { ClickHouse } from '../infra/clickhouse.ts'
import { chDateTime, LONG_QUERY, sqlStringArray } from '../infra/ch-literals.ts'
import { EVENT_COLUMNS, type StoredEventRow } from '../infra/stored-events.ts'
import type { UsageEvent } from '../core/events.ts'
import type { UsageRow } from '../core/meters.ts'
import { idHashes } from '../core/dedup-hash.ts'

export interface EventKey {
  tenantId: string
  environmentId: string
  id: string
}

export const keyOf = (k: EventKey): string => `${k.tenantId}\u0000${k.environmentId}\u0000${k.id}`

/**
 * Event ids by scope (tenant, environment). A chunk's events mostly share one scope: the last scope asked
 * about is kept at hand, found or not, so an event costs a lookup in a set of ids, not a joined key string
 * (an empty or other-scope set of pending ids was asked with a new key string for every event).
 */
export class EventIds {
  private readonly scopes = new Map<string, Set<string>>()
  private lastTenant: string | undefined
  private lastEnvironment: string | undefined
  private lastIds: Set<string> | undefined
  size = 0

  private ids(k: EventKey, create: boolean): Set<string> | undefined {
    if (k.tenantId !== this.lastTenant || k.environmentId !== this.lastEnvironment) {
      this.lastTenant = k.tenantId
      this.lastEnvironment = k.environmentId
      this.lastIds = this.scopes.size === 0 ? undefined : this.scopes.get(`${k.tenantId}\u0000${k.environmentId}`)
    }
    if (this.lastIds === undefined && create) {
      this.lastIds = new Set()
      this.scopes.set(`${k.tenantId}\u0000${k.environmentId}`, this.lastIds)
    }
    return this.lastIds
  }

  has(k: EventKey): boolean {
    return this.ids(k, false)?.has(k.id) ?? false
  }

  /** Adds the key; false when it was already there (one set operation, not a lookup and then an add). */
  add(k: EventKey): boolean {
    const ids = this.ids(k, true)!
    const before = ids.size
    ids.add(k.id)
    if (ids.size === before) return false
    this.size++
    return true
  }

  delete(k: EventKey): void {
    if (this.ids(k, false)?.delete(k.id)) this.size--
  }
}

/** Lookups up to this many ids name them in the statement (the primary key then skips granules); larger ones go as data. */
const LISTED_IDS = 1000

/**
 * What the dedup lookup asks about: the scopes of a batch and its ids, either listed (up to LISTED_IDS) or as one
 * text of TabSeparated lines (storedRows says why), and each id's dedup hash with its scope (core/dedup-hash.ts) for
 * the dedup filter, in the same order. It is built where the ids are (the decode thread), and one string and one
 * array cross threads instead of tens of thousands of strings.
 */
export interface KeyLookup {
  tenants: string[]
  envs: string[]
  ids?: string[]
  text?: string
  /** Pairs (high, low 32 bits): entry i is the hash of ids[i] (or of the text's line i) in its scope. */
  hashes?: Uint32Array
}

/** A lookup of ids in the tenants and environments given: listed or as text, by their number. */
export const lookupOfIds = ({ tenants, envs }: Pick<KeyLookup, 'tenants' | 'envs'>, ids: string[]): KeyLookup =>
  ids.length <= LISTED_IDS ? { tenants, envs, ids } : { tenants, envs, text: tsvLines(ids) }

/**
 * The lookup of distinct keys (a batch's candidates), with their hashes. Keys of several scopes may hold one id twice
 * (one per scope): it is asked twice, which the lookup's IN ignores, so each entry keeps its key's hash.
 */
export function lookupOf(keys: EventKey[]): KeyLookup {
  const [tenants, envs] = [new Set<string>(), new Set<string>()]
  for (const k of keys) {
    tenants.add(k.tenantId)
    envs.add(k.environmentId)
  }
  return { ...lookupOfIds({ tenants: [...tenants], envs: [...envs] }, keys.map((k) => k.id)), hashes: idHashes(keys) }
}

/** The ids of a lookup in order: listed, or its text's lines unescaped. */
export function idsOf({ ids, text }: KeyLookup): string[] {
  if (ids) return ids
  if (!text) return []
  const lines = text.split('\n')
  return text.includes('\\') ? lines.map((l) => l.replace(/\\(.)/g, (_, c: string) => TSV_UNESCAPES[c] ?? c)) : lines
}

const TSV_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }
const TSV_UNESCAPES: Record<string, string> = { t: '\t', n: '\n', r: '\r' }
const TSV_SPECIAL = /[\\\t\n\r]/g

/** A string as a TabSeparated field. */
export const tsvField = (v: string): string => v.replace(TSV_SPECIAL, (c) => TSV_ESCAPES[c])

/**
 * Strings as TabSeparated lines: joined as they are when none holds a backslash, tab or line break (one join and
 * one scan, not a quoted copy of each), else each escaped.
 */
function tsvLines(values: string[]): string {
  const joined = values.join('\n')
  let breaks = 0
  for (let at = joined.indexOf('\n'); at !== -1; at = joined.indexOf('\n', at + 1)) breaks++
  if (breaks === values.length - 1 && !/[\\\t\r]/.test(joined)) return joined
  return values.map(tsvField).join('\n')
}

/** A stored key as the lookup answers it: tenant, environment, id, and when intake received the stored copy (epoch ms). */
/** A stored id as the lookup answers it: tenant, environment, id, the receipt instant (epoch ms) and receipt of the copy stored. */
export type StoredRow = [string, string, string, string, string]

/**
 * The keys of a lookup already stored, with the instant intake received each stored copy, on the reader (it runs beside
 * the previous batch's insert). Listed ids: chDB binds them as one array parameter, a server takes them in the SQL text
 * (a parameter travels in the URL); the primary key then skips granules. A chunk's ids go in as rows (ClickHouse.withRows:
 * a file on chDB): as an Array(String) parameter, a list over about 1 MB (some 25,000 UUIDs, a default chunk) made
 * ClickHouse compare every row with every id (30,000 UUIDs against 200,000 rows: 35 s), and below that its text cost
 * ~3 µs an id to parse. So many random ids touch every granule anyway, so that query scans the scope's id hashes
 * (sql/clickhouse/0004_event_ids_hash.sql) and returns every row whose hash was asked: the caller matches ids exactly
 * (keysOf, then has), so a row of a colliding hash is never taken for a stored event. The dedup filter
 * (aggregator/dedup-filter.ts) sends here only the ids it may hold.
 */
export async function storedRows(ch: ClickHouse, lookup: KeyLookup): Promise<StoredRow[]> {
  const columns = 'tenant_id, environment_id, event_id, toString(toUnixTimestamp64Milli(received_at)), toString(receipt)'
  // Many ids: the hashes first (PREWHERE), the ids only of the rows whose hash was asked.
  return idsQuery<StoredRow>(ch, lookup, ({ list, rows }) =>
    rows ? `SELECT ${columns} FROM event_ids PREWHERE id_hash IN (SELECT sipHash64(event_id) FROM ${rows}) WHERE` : `SELECT ${columns} FROM event_ids WHERE event_id IN ${list} AND`,
  )
}

/** A recorded drop as recordedDrops answers it: tenant, environment, id, kind, the receipt instant (epoch ms) and receipt of the copy dropped. */
export type DropRow = [string, string, string, string, string, string]

/**
 * The drops already recorded for the ids of a lookup (by the primary key of event_drops when listed, a scan when
 * given as rows): a chunk read again after a crash must not record its duplicates twice.
 */
export async function recordedDrops(ch: ClickHouse, lookup: KeyLookup): Promise<DropRow[]> {
  const columns = 'tenant_id, environment_id, event_id, toString(kind), toString(toUnixTimestamp64Milli(received_at)), toString(receipt)'
  return idsQuery<DropRow>(ch, lookup, ({ list }) => `SELECT ${columns} FROM event_drops WHERE event_id IN ${list} AND`)
}

/**
 * A query of rows for a lookup's ids, ending in AND: `where` is given the ids as an IN operand (`list`) and, when they
 * come as rows, their table expression (`rows`). Listed ids are bound as one array parameter on chDB or written in the
 * SQL on a server (a parameter travels in the URL); many are rows read from a file (ClickHouse.withRows).
 */
async function idsQuery<R>(ch: ClickHouse, { tenants, envs, ids, text }: KeyLookup, where: (asked: { list: string; rows?: string }) => string): Promise<R[]> {
  const run = async (asked: { list: string; rows?: string }): Promise<R[]> => {
    const rs = await ch.reader.query({
      query: `${where(asked)} tenant_id IN {tenants:Array(String)} AND environment_id IN {envs:Array(String)}`,
      query_params: { tenants, envs, ...(ch.kind === 'chdb' && text === undefined ? { ids } : {}) },
      format: 'JSONCompactEachRow',
      clickhouse_settings: LONG_QUERY,
    })
    return rs.json<R>()
  }
  if (text !== undefined) return ch.withRows({ format: 'TabSeparated', structure: 'event_id String', text }, (rows) => run({ list: `(SELECT event_id FROM ${rows})`, rows }))
  return ids?.length ? run({ list: ch.kind === 'chdb' ? '{ids:Array(String)}' : sqlStringArray(ids) }) : []
}

/** Which copy a stored row or a recorded drop was: its receipt instant (epoch ms) and receipt (0: none). */
export interface Copy {
  ms: number
  receipt: number
}

/**
 * Whether `e` is the very copy received as `c` (read again, not a client's resend): the same instant and, where both
 * have one, the same receipt. Rows from before receipts (0) compare by instant alone.
 */
export function sameCopy(c: Copy, e: Pick<UsageEvent, 'receivedAt' | 'receipt'>): boolean {
  return c.ms === (e.receivedAt?.getTime() ?? 0) && (c.receipt === 0 || !e.receipt || c.receipt === e.receipt)
}

/** What the lookup found stored: the keys, and which copy each stored one was (a copy read again is not a resend). */
export interface StoredKeys {
  keys: EventIds
  copies: Map<string, Copy>
}

export function keysOf(rows: StoredRow[]): StoredKeys {
  const keys = new EventIds()
  const copies = new Map<string, Copy>()
  for (const [tenantId, environmentId, id, received, receipt] of rows) {
    const k = { tenantId, environmentId, id }
    keys.add(k)
    copies.set(keyOf(k), { ms: Number(received), receipt: Number(receipt) })
  }
  return { keys, copies }
}

export type Outcome =
  | { kind: 'stored'; event: UsageEvent; rows: UsageRow[] }
  | { kind: 'duplicate' | 'rejected'; event: Pick<UsageEvent, 'id' | 'tenantId' | 'environmentId'> & Partial<UsageEvent>; reason: string }

const BATCH_COLUMNS = [
  'kind', 'tenant_id', 'environment_id', 'id', 'external_customer_id', 'customer_id', 'event_name', 'source', 'timestamp',
  'received_at', 'properties', 'reason', 'expires_at', 'meter_ids', 'revisions', 'meter_values', 'group_values', 'unique_values', 'receipt',
] as const

const text = JSON.stringify

/** Printable ASCII but quote and backslash: the JSON text of such a string is the string in quotes. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** A string as JSON text: plain ones quoted as they are (~40 ns), the others by JSON.stringify (~150 ns for an id). */
export const quote = (s: string): string => (PLAIN.test(s) ? `"${s}"` : text(s))

/**
 * quote, kept for the next call with the same string: a chunk's events mostly share their scope, name,
 * source and meter (decoding makes equal consecutive strings one string, so the test is a pointer compare).
 */
function lastQuoted(): (s: string) => string {
  let last: string | undefined
  let quoted = ''
  return (s) => (s === last ? quoted : ((last = s), (quoted = quote(s))))
}
const [tenantText, environmentText, customerIdText, nameText, sourceText, meterText] = Array.from({ length: 6 }, lastQuoted)

/** The meter columns of a stored event's line (arrays of one element, the common case, without a map each). */
function meterColumns(rows: UsageRow[]): string {
  if (rows.length === 0) return '[],[],[],[],[]'
  if (rows.length === 1) {
    const [r] = rows
    return `[${meterText(r.meterId)}],[${r.revision}],[${quote(r.value)}],[${quote(r.groupValue)}],[${quote(r.uniqueValue)}]`
  }
  const column = (f: (r: UsageRow) => string) => `[${rows.map((r) => quote(f(r))).join(',')}]`
  return `${column((r) => r.meterId)},[${rows.map((r) => r.revision).join(',')}],${column((r) => r.value)},${column((r) => r.groupValue)},${column((r) => r.uniqueValue)}`
}

/**
 * One JSONCompactEachRow line of event_batches, written straight from the outcome: no row object, strings
 * quoted by hand where JSON needs no escape, instants as epoch milliseconds (DateTime64(3) reads an integer
 * as milliseconds) rather than formatted dates, and the properties as their JSON object, which ClickHouse
 * stores as its text (input_format_json_read_objects_as_strings): one stringify, not a second one quoting the first.
 */
export function batchLine(o: Outcome, expiresAt: string): string {
  const e = o.event
  const head = `${tenantText(e.tenantId)},${environmentText(e.environmentId)},${quote(e.id)},${quote(e.externalCustomerId ?? '')},${customerIdText(e.customerId ?? '')},${nameText(e.eventName ?? '')},${sourceText(e.source ?? '')},${e.timestamp?.getTime() ?? 0},${e.receivedAt?.getTime() ?? 0}`
  if (o.kind !== 'stored') return `["${o.kind}",${head},"",${quote(o.reason)},${expiresAt},[],[],[],[],[],${e.receipt ?? 0}]`
  return `["stored",${head},${text(e.properties)},"",${expiresAt},${meterColumns(o.rows)},${e.receipt ?? 0}]`
}

/** event_batches.expires_at of rows inserted now: the end of the dedup window. */
export const expiresText = (dedupUntil: Date): string => text(chDateTime(dedupUntil).slice(0, 19))

/**
 * One INSERT for the whole batch (batchLine's lines, JSON escaping every newline inside one): the views fan it out to events, event_ids,
 * meter_usage and event_drops. The token makes a retry of the same batch a no-op in every target table.
 */
export async function insertBatch(ch: ClickHouse, rows: string | Uint8Array, token: string): Promise<void> {
  if (rows.length === 0) return
  await ch.insertRaw({
    table: 'event_batches',
    columns: BATCH_COLUMNS,
    format: 'JSONCompactEachRow',
    rows,
    settings: {
      insert_deduplication_token: token,
      deduplicate_blocks_in_dependent_materialized_views: 1,
      // One block per batch whatever its size, so the token covers the batch as a whole (max_block_size: rows
      // read from a file, as on chDB, came in blocks of 65,409).
      max_insert_block_size: '10000000',
      max_block_size: '10000000',
      min_insert_block_size_rows: '0',
      min_insert_block_size_bytes: '0',
      // The views fill their tables side by side rather than one after the other.
      parallel_view_processing: 1,
      // Blocks are not merged as they are written (-0.3 µs of CPU an event): the views' rows are already one per
      // key, a batch's ids distinct, and every read of the state tables aggregates anyway.
      optimize_on_insert: 0,
      input_format_json_read_objects_as_strings: 1,
      // Parsed in one piece: a batch over 10 MiB (min_chunk_bytes_for_parallel_parsing; 50,000 events are ~12 MB)
      // was cut into blocks parsed on several threads, each run through the views on its own: ~2 µs of CPU
      // more per event on chDB (6 instead of 8), and more than one block per batch.
      input_format_parallel_parsing: 0,
    },
  })
}

export interface BackfillPage {
  after?: { customer: string; timestamp: string; id: string }
  limit: number
}

/**
 * A page of the events a meter revision should count but has no row for, among events inserted before
 * the cutoff (older than `settledMs` by the server's clock), in primary-key order.
 */
export async function eventsMissingRows(
  ch: ClickHouse,
  q: { tenantId: string; environmentId: string; eventName: string; meterId: string; revision: number; settledMs: number },
  page: BackfillPage,
): Promise<StoredEventRow[]> {
  const rs = await ch.client.query({
    query: `SELECT ${EVENT_COLUMNS} FROM events
      WHERE tenant_id = {tenant:String} AND environment_id = {env:String} AND event_name = {name:String}
        AND inserted_at < now64(3) - toIntervalMillisecond({settled:UInt32})
        AND (external_customer_id, timestamp, id) > ({c:String}, {t:DateTime64(3, 'UTC')}, {id:String})
        AND id NOT IN (SELECT event_id FROM meter_usage WHERE tenant_id = {tenant:String} AND environment_id = {env:String}
                         AND meter_id = {meter:String} AND revision = {rev:UInt32})
        -- A cancelled event (a usage correction, sql/clickhouse/0010) counts for no revision.
        AND id NOT IN (SELECT event_id FROM event_cancellations WHERE tenant_id = {tenant:String} AND environment_id = {env:String})
      ORDER BY external_customer_id, timestamp, id
      LIMIT {limit:UInt32}`,
    query_params: {
      tenant: q.tenantId,
      env: q.environmentId,
      name: q.eventName,
      settled: q.settledMs,
      meter: q.meterId,
      rev: q.revision,
      c: page.after?.customer ?? '',
      t: page.after?.timestamp ?? '1970-01-01 00:00:00.000',
      id: page.after?.id ?? '',
      limit: page.limit,
    },
    format: 'JSONEachRow',
  })
  return rs.json<StoredEventRow>()
}

export async function countEvents(ch: ClickHouse, q: { tenantId: string; environmentId: string; eventName: string }): Promise<number> {
  const rs = await ch.client.query({
    query: `SELECT toString(count()) AS n FROM events
      WHERE tenant_id = {tenant:String} AND environment_id = {env:String} AND event_name = {name:String}`,
    query_params: { tenant: q.tenantId, env: q.environmentId, name: q.eventName },
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ n: string }>()
  return Number(row.n)
}

export interface MeterUsageInsert {
  tenant_id: string
  environment_id: string
  external_customer_id: string
  /** The event's source: the usage breakdowns by source get the row too. */
  source: string
  timestamp: string
  event_id: string
  row: UsageRow
}

/**
 * Backfilled meter rows, into meter_usage_backfill (a Null table, sql/clickhouse/0005_usage_breakdowns.sql) whose views
 * write meter_usage (and on to its rollups) and the usage breakdowns by source in the same statement; the token names
 * the page so a rerun of it is dropped by every table.
 */
export async function insertMeterUsage(ch: ClickHouse, rows: MeterUsageInsert[], token: string): Promise<void> {
  if (rows.length === 0) return
  await ch.insertRaw({
    table: 'meter_usage_backfill',
    format: 'JSONEachRow',
    rows: rows
      .map((r) =>
        JSON.stringify({
          tenant_id: r.tenant_id,
          environment_id: r.environment_id,
          meter_id: r.row.meterId,
          revision: r.row.revision,
          external_customer_id: r.external_customer_id,
          source: r.source,
          timestamp: r.timestamp,
          event_id: r.event_id,
          value: r.row.value,
          group_value: r.row.groupValue,
          unique_value: r.row.uniqueValue,
        }),
      )
      .join('\n'),
    settings: { insert_deduplication_token: token, deduplicate_blocks_in_dependent_materialized_views: 1 },
  })
}
