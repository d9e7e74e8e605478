// What each entity exports: its columns, where its rows come from (a ClickHouse statement, or keyset pages of a
// Postgres table) and the Parquet type of each column. One place for the wire names of every export file.
import type { CsvColumn } from '../../core/csv.ts'
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'
import { chDateTime, sqlString, sqlStringArray } from '../../infra/ch-literals.ts'
import { neutralizedSql } from '../../infra/ch-csv.ts'
import { notCancelledIn } from '../usage/corrections/store.ts'

/** How a column is written: text (neutralized in CSV), an instant (ISO 8601 in CSV), a decimal amount, a count, raw JSON text. */
type ColumnKind = 'text' | 'time' | 'decimal' | 'count' | 'json'

export interface ExportColumn {
  name: string
  kind: ColumnKind
}

/** A ClickHouse-held entity: its columns, each with the expression that reads it, and the rows' table and filter. */
export interface ChSource {
  columns: (ExportColumn & { sql: string })[]
  from: string
  where: string[]
}

const PARQUET_TYPES: Record<ColumnKind, string> = {
  text: 'Nullable(String)',
  json: 'Nullable(String)',
  time: "Nullable(DateTime64(3, 'UTC'))",
  decimal: 'Nullable(Decimal(38, 12))',
  count: 'Nullable(Int64)',
}

/** The columns as core/csv.ts's header takes them. */
export const csvColumns = (columns: readonly ExportColumn[]): CsvColumn[] =>
  columns.map((c) => ({ name: c.name, kind: c.kind === 'decimal' || c.kind === 'count' ? 'number' : 'text' }))

/** The structure ClickHouse reads an intermediate file of these columns with, typed as the Parquet file keeps them. */
export const structureOf = (columns: readonly ExportColumn[]): string => columns.map((c) => `\`${c.name}\` ${PARQUET_TYPES[c.kind]}`).join(', ')

/**
 * Parquet pages compressed with Snappy: every Parquet reader has it (ClickHouse's default, ZSTD, is missing from some,
 * hyparquet without its plugins among them). Row groups of 100,000 rows: ClickHouse encodes several at once and holds
 * each whole, so its default of 1,000,000 made memory grow with the file (6M usage rows: +509 MB peak RSS against
 * +122 MB for 600,000); at 100,000, +179 MB against +102 MB.
 */
export const PARQUET_SETTINGS = "output_format_parquet_compression_method = 'snappy', output_format_parquet_row_group_size = 100000"

const isoInstant = (col: string) => `formatDateTime(${col}, '%Y-%m-%dT%H:%i:%S.%fZ')`

/** The SELECT of a ClickHouse entity: CSV cells written as the raw-events export writes them, or typed values for Parquet. */
export function chSelect(source: ChSource, format: 'csv' | 'parquet'): string {
  const cell = (c: ChSource['columns'][number]) => {
    if (format === 'parquet') return `${c.sql} AS \`${c.name}\``
    if (c.kind === 'text') return `${neutralizedSql(c.sql)} AS \`${c.name}\``
    if (c.kind === 'time') return `${isoInstant(c.sql)} AS \`${c.name}\``
    return `${c.sql} AS \`${c.name}\``
  }
  // The filters name the table's columns, which the cells' aliases would otherwise shadow.
  const settings = ['prefer_column_name_to_alias = 1', ...(format === 'parquet' ? [PARQUET_SETTINGS] : [])]
  return `SELECT ${source.columns.map(cell).join(', ')} FROM ${source.from} WHERE ${source.where.join(' AND ')} SETTINGS ${settings.join(', ')}`
}

const scopeWhere = (scope: Scope) => [`tenant_id = ${sqlString(scope.tenantId)}`, `environment_id = ${sqlString(scope.environmentId)}`]
const rangeWhere = (col: string, start: Date, end: Date) => [
  `${col} >= toDateTime64(${sqlString(chDateTime(start))}, 3, 'UTC')`,
  `${col} < toDateTime64(${sqlString(chDateTime(end))}, 3, 'UTC')`,
]

/** Stored events of [start, end): the raw-events export's columns, in the table's order. */
export function eventsSource(scope: Scope, start: Date, end: Date, f: { external_customer_ids?: string[]; event_names?: string[]; sources?: string[] }): ChSource {
  // Corrected usage: a cancelled event (an amended one's original included) is left out, as usage reads leave it out.
  const where = [...scopeWhere(scope), ...rangeWhere('timestamp', start, end), notCancelledIn(scope, 'id')]
  if (f.external_customer_ids) where.push(`external_customer_id IN ${sqlStringArray(f.external_customer_ids)}`)
  if (f.event_names) where.push(`event_name IN ${sqlStringArray(f.event_names)}`)
  if (f.sources) where.push(`source IN ${sqlStringArray(f.sources)}`)
  return {
    columns: [
      { name: 'event_id', kind: 'text', sql: 'id' },
      { name: 'timestamp', kind: 'time', sql: 'timestamp' },
      { name: 'received_at', kind: 'time', sql: 'received_at' },
      { name: 'external_customer_id', kind: 'text', sql: 'external_customer_id' },
      { name: 'customer_id', kind: 'text', sql: 'customer_id' },
      { name: 'event_name', kind: 'text', sql: 'event_name' },
      { name: 'source', kind: 'text', sql: 'source' },
      { name: 'properties', kind: 'json', sql: 'properties' },
    ],
    from: 'events',
    where,
  }
}

/**
 * Metered usage of [start, end): one row per stored event and meter that counts it, with the value the meter took
 * from it (what the rollups sum), read at each meter's ready revision as usage queries read it.
 */
export function usageSource(scope: Scope, start: Date, end: Date, meters: { id: string; revision: number }[], f: { external_customer_ids?: string[] }): ChSource {
  const pairs = meters.map((m) => `(${sqlString(m.id)}, ${m.revision})`)
  // A cancelled event's rows and the cancel rows (sign -1) that offset them in the rollups are both left out.
  const where = [...scopeWhere(scope), ...rangeWhere('timestamp', start, end), pairs.length > 0 ? `(meter_id, revision) IN (${pairs.join(', ')})` : '0', 'sign = 1', notCancelledIn(scope, 'event_id')]
  if (f.external_customer_ids) where.push(`external_customer_id IN ${sqlStringArray(f.external_customer_ids)}`)
  return {
    columns: [
      { name: 'timestamp', kind: 'time', sql: 'timestamp' },
      { name: 'external_customer_id', kind: 'text', sql: 'external_customer_id' },
      { name: 'meter_id', kind: 'text', sql: 'meter_id' },
      { name: 'event_id', kind: 'text', sql: 'event_id' },
      { name: 'value', kind: 'decimal', sql: 'value' },
      { name: 'group_value', kind: 'text', sql: 'group_value' },
    ],
    from: 'meter_usage',
    where,
  }
}

/** A Postgres-held entity: its table and columns (as Postgres names them), the rows of a window by created_at. */
interface PgSource {
  table: string
  columns: ExportColumn[]
}

const text = (name: string): ExportColumn => ({ name, kind: 'text' })
const time = (name: string): ExportColumn => ({ name, kind: 'time' })
const decimal = (name: string): ExportColumn => ({ name, kind: 'decimal' })

export const PG_SOURCES = {
  invoices: {
    table: 'invoices',
    columns: [
      text('id'), text('invoice_number'), text('customer_id'), text('subscription_id'), text('invoice_type'), text('invoice_status'), text('payment_status'),
      text('billing_reason'), text('currency'), decimal('subtotal'), decimal('total_discount'), decimal('total_tax'), decimal('total'), decimal('amount_due'),
      decimal('amount_paid'), decimal('amount_remaining'), time('period_start'), time('period_end'), time('due_date'), time('finalized_at'), time('created_at'),
    ],
  },
  credit_notes: {
    table: 'credit_notes',
    columns: [
      text('id'), text('credit_note_number'), text('invoice_id'), text('customer_id'), text('credit_note_type'), text('credit_note_status'), text('reason'),
      text('currency'), decimal('total_amount'), time('finalized_at'), time('created_at'),
    ],
  },
  wallet_transactions: {
    table: 'wallet_transactions',
    columns: [
      text('id'), text('wallet_id'), text('customer_id'), text('type'), text('transaction_reason'), text('transaction_status'), decimal('amount'),
      decimal('credit_amount'), decimal('credits_available'), text('currency'), time('expiry_date'), text('reference_type'), text('reference_id'), time('created_at'),
    ],
  },
} satisfies Record<string, PgSource>

type PgRow = Record<string, string | Date | null>
/** Rows a page of a Postgres export reads: memory holds one page. */
const PAGE = 5000

/**
 * The rows of a Postgres entity created in [start, end) (not deleted; of some customers, of some wallet transaction
 * types), oldest first, read a page at a time by
 * (created_at, id) — the cursor kept as Postgres's own text of the instant, whose microseconds a Date would lose.
 */
export async function* pgRows(db: Db, scope: Scope, source: PgSource, start: Date, end: Date, only: { customerIds?: string[]; types?: string[] }): AsyncGenerator<PgRow[]> {
  const columns = db.unsafe(source.columns.map((c) => `"${c.name}"`).join(', '))
  let after: { at: string; id: string } | undefined
  for (;;) {
    const rows = (await db`SELECT ${columns}, created_at::text AS cursor_at FROM ${db(source.table)}
      WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status <> 'deleted'
        AND created_at >= ${start} AND created_at < ${end}
        ${only.customerIds ? db`AND customer_id = ANY(${only.customerIds})` : db``}
        ${only.types ? db`AND type = ANY(${only.types})` : db``}
        ${after ? db`AND (created_at, id) > (${after.at}::timestamptz, ${after.id})` : db``}
      ORDER BY created_at, id LIMIT ${PAGE}`) as unknown as (PgRow & { cursor_at: string })[]
    if (rows.length === 0) return
    const last = rows[rows.length - 1]
    after = { at: last.cursor_at, id: last.id as string }
    yield rows
    if (rows.length < PAGE) return
  }
}
