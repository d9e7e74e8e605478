// Writes one export file (CSV or Parquet) of one entity over a time window: the engine behind export tasks and
// scheduled exports. Memory stays flat whatever the size:
// - events and usage (ClickHouse): CSV is ClickHouse's own text streamed to the file a block at a time; Parquet is
//   written by ClickHouse itself (chDB: INTO OUTFILE; a server: the response body streamed to the file).
// - invoices, credit notes, wallet transactions (Postgres): keyset pages of 5,000 rows; CSV written here through
//   core/csv.ts, Parquet by ClickHouse from an intermediate JSONEachRow file of the same pages (chDB only).
// - analytics: the analytics export's CSV (domains/analytics/export.ts); Parquet converted from it by ClickHouse.
import { mkdir, open, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { csvHeader, csvWriter } from '../../core/csv.ts'
import { validationError } from '../../core/errors.ts'
import type { Scope } from '../../core/scope.ts'
import type { WindowSize } from '../../core/periods.ts'
import type { Deps } from '../../infra/deps.ts'
import { sqlString } from '../../infra/ch-literals.ts'
import { analyticsExport } from '../analytics/export.ts'
import { listMeters } from '../catalog/meters/service.ts'
import { everyItem, systemActor } from '../records/service.ts'
import { parquetWritten } from './parquet-rows.ts'
import { PARQUET_SETTINGS, chSelect, csvColumns, eventsSource, PG_SOURCES, pgRows, structureOf, usageSource, type ChSource, type ExportColumn } from './sources.ts'

export type ExportEntity = 'events' | 'usage' | 'invoices' | 'credit_notes' | 'wallet_transactions' | 'analytics'
export type ExportFormat = 'csv' | 'parquet'
export interface ExportSpec {
  entity_type: ExportEntity
  format: ExportFormat
  start_time: string          // ISO; rows in [start_time, end_time)
  end_time: string
  filters?: Record<string, unknown>  // entity-specific, validated by writeExportFile (validationError naming the field)
}

const EXPORT_ENTITIES: readonly ExportEntity[] = ['events', 'usage', 'invoices', 'credit_notes', 'wallet_transactions', 'analytics']
export const EXPORT_FORMATS: readonly ExportFormat[] = ['csv', 'parquet']

type Progress = (rowsWritten: number) => void
interface Written { rows: number; bytes: number }

/** The filters each entity takes, and whether each is a list of texts or one text. */
const FILTERS: Record<ExportEntity, Record<string, 'list' | 'text'>> = {
  events: { external_customer_ids: 'list', event_names: 'list', sources: 'list' },
  usage: { meter_ids: 'list', external_customer_ids: 'list' },
  invoices: { customer_ids: 'list' },
  credit_notes: { customer_ids: 'list' },
  wallet_transactions: { customer_ids: 'list', types: 'list' },
  analytics: { external_customer_id: 'text', feature_ids: 'list', sources: 'list', group_by: 'list', window_size: 'text' },
}

type Filters = Record<string, string | string[] | undefined>

function checkedFilters(entity: ExportEntity, filters: Record<string, unknown> | undefined): Filters {
  if (filters === undefined || filters === null) return {}
  if (typeof filters !== 'object' || Array.isArray(filters)) throw validationError('filters', 'must be an object')
  const out: Filters = {}
  for (const [key, value] of Object.entries(filters)) {
    const kind = FILTERS[entity][key]
    const field = `filters.${key}`
    if (!kind) throw validationError(field, `is not a filter of ${entity} exports (they take ${Object.keys(FILTERS[entity]).join(', ')})`)
    if (value === undefined || value === null) continue
    if (kind === 'text') {
      if (typeof value !== 'string' || value.trim() === '') throw validationError(field, 'must be a non-empty string')
      out[key] = value.trim()
    } else {
      if (!Array.isArray(value) || value.length === 0 || value.length > 1000 || !value.every((v) => typeof v === 'string' && v.trim() !== '')) {
        throw validationError(field, 'must be a list of 1 to 1,000 non-empty strings')
      }
      out[key] = value.map((v: string) => v.trim())
    }
  }
  return out
}

function instant(field: string, value: unknown): Date {
  const d = typeof value === 'string' ? new Date(value) : new Date(NaN)
  if (Number.isNaN(d.getTime())) throw validationError(field, 'must be an ISO 8601 date-time')
  return d
}

/** The spec checked: every refusal of its form happens here, before a byte is written (a scheduled task checks its own at creation). */
export function checked(spec: ExportSpec): { entity: ExportEntity; format: ExportFormat; start: Date; end: Date; filters: Filters } {
  if (!EXPORT_ENTITIES.includes(spec.entity_type)) throw validationError('entity_type', `must be one of ${EXPORT_ENTITIES.join(', ')}`)
  if (!EXPORT_FORMATS.includes(spec.format)) throw validationError('format', `must be one of ${EXPORT_FORMATS.join(', ')}`)
  const start = instant('start_time', spec.start_time)
  const end = instant('end_time', spec.end_time)
  if (end <= start) throw validationError('end_time', 'must be after start_time')
  return { entity: spec.entity_type, format: spec.format, start, end, filters: checkedFilters(spec.entity_type, spec.filters) }
}

/** Writes one file at `path` (creating directories), reporting rows written so far; throws a validationError for a bad spec before writing. */
export async function writeExportFile(deps: Deps, scope: Scope, spec: ExportSpec, path: string,
  onProgress: Progress = () => {}): Promise<{ rows: number; bytes: number }> {
  const { entity, format, start, end, filters } = checked(spec)
  if (format === 'parquet' && entity !== 'events' && entity !== 'usage' && deps.ch.kind !== 'chdb') {
    throw validationError('format', `parquet of ${entity} is converted by the embedded ClickHouse (chDB); with a ClickHouse server ask for csv`)
  }
  // Everything resolved before the directory is made: a bad analytics request (group_by, window_size) or an unknown
  // meter is refused with nothing written.
  const run = await writerOf(deps, scope, entity, format, start, end, filters)
  await mkdir(dirname(path), { recursive: true })
  try {
    return await run(path, onProgress)
  } catch (err) {
    // No partial file left behind that could pass for a whole one.
    await rm(path, { force: true })
    throw err
  }
}

type Writer = (path: string, onProgress: Progress) => Promise<Written>

async function writerOf(deps: Deps, scope: Scope, entity: ExportEntity, format: ExportFormat, start: Date, end: Date, filters: Filters): Promise<Writer> {
  const list = (key: string) => filters[key] as string[] | undefined
  switch (entity) {
    case 'events':
    case 'usage': {
      const source =
        entity === 'events'
          ? eventsSource(scope, start, end, { external_customer_ids: list('external_customer_ids'), event_names: list('event_names'), sources: list('sources') })
          : usageSource(scope, start, end, await metersOf(deps, scope, list('meter_ids')), { external_customer_ids: list('external_customer_ids') })
      return (path, progress) => (format === 'csv' ? chCsv(deps, source, path, progress) : chParquet(deps, source, path, progress))
    }
    case 'analytics': {
      const a = analyticsOf(deps, scope, start, end, filters)
      if (format === 'csv') return (path, progress) => analyticsCsv(a, path, progress)
      return (path, progress) => viaIntermediate(deps, path, progress, analyticsCsvConversion(a), (tmp, p) => analyticsCsv(a, tmp, p))
    }
    default: {
      const source = PG_SOURCES[entity]
      const pages = () => pgRows(deps.sql, scope, source, start, end, { customerIds: list('customer_ids'), types: list('types') })
      if (format === 'csv') return (path, progress) => pgCsv(source.columns, pages(), path, progress)
      return (path, progress) => viaIntermediate(deps, path, progress, jsonConversion(source.columns), (tmp, p) => pgJson(source.columns, pages(), tmp, p))
    }
  }
}

/** Meters of the scope as usage queries read them: each at its ready revision (none yet: nothing to read). */
async function metersOf(deps: Deps, scope: Scope, ids: string[] | undefined): Promise<{ id: string; revision: number }[]> {
  const found = (await everyItem((params) => listMeters(deps, scope, params)))
    .filter((m) => m.ready_revision > 0 && (!ids || ids.includes(m.id)))
    .map((m) => ({ id: m.id, revision: m.ready_revision }))
  const unknown = ids?.find((id) => !found.some((m) => m.id === id))
  if (unknown !== undefined) throw validationError('filters.meter_ids', `meter ${unknown} is not a meter of this environment with usage to read`)
  return found
}

/** Writes each piece as it comes, awaiting the write before the next: one piece in memory. */
async function writePieces(path: string, head: string, pieces: AsyncIterable<{ bytes: Uint8Array | string; rows: number }>, onProgress: Progress): Promise<Written> {
  const file = await open(path, 'w')
  let rows = 0
  let bytes = 0
  try {
    bytes += (await file.write(head)).bytesWritten
    for await (const piece of pieces) {
      bytes += (typeof piece.bytes === 'string' ? await file.write(piece.bytes) : await file.write(piece.bytes)).bytesWritten
      rows += piece.rows
      onProgress(rows)
    }
  } finally {
    await file.close()
  }
  return { rows, bytes }
}

function chCsv(deps: Deps, source: ChSource, path: string, onProgress: Progress): Promise<Written> {
  return writePieces(path, csvHeader(csvColumns(source.columns)), deps.ch.streamCsv({ query: chSelect(source, 'csv'), settings: { max_block_size: '65536' } }), onProgress)
}

/** ClickHouse writes the Parquet file itself; the rows are counted from the file's footer afterwards. */
async function chParquet(deps: Deps, source: ChSource, path: string, onProgress: Progress): Promise<Written> {
  const select = chSelect(source, 'parquet')
  if (deps.ch.kind === 'chdb') {
    await deps.ch.commandApart(`${select} INTO OUTFILE ${sqlString(path)} TRUNCATE FORMAT Parquet`)
  } else {
    const { stream } = await deps.ch.client.exec({ query: `${select} FORMAT Parquet` })
    await writePieces(path, '', (async function* () {
      for await (const chunk of stream as AsyncIterable<Buffer>) yield { bytes: chunk, rows: 0 }
    })(), () => {})
  }
  return parquetWritten(path, onProgress)
}

async function pgCsv(columns: ExportColumn[], pages: AsyncIterable<Record<string, unknown>[]>, path: string, onProgress: Progress): Promise<Written> {
  const writer = csvWriter(csvColumns(columns))
  async function* pieces() {
    for await (const page of pages) {
      let text = ''
      for (const row of page) text += writer.row(columns.map((c) => cellOf(row[c.name])))
      yield { bytes: text, rows: page.length }
    }
  }
  return writePieces(path, writer.header, pieces(), onProgress)
}

async function pgJson(columns: ExportColumn[], pages: AsyncIterable<Record<string, unknown>[]>, path: string, onProgress: Progress): Promise<Written> {
  async function* pieces() {
    for await (const page of pages) {
      let text = ''
      for (const row of page) text += `${JSON.stringify(Object.fromEntries(columns.map((c) => [c.name, cellOf(row[c.name])])))}\n`
      yield { bytes: text, rows: page.length }
    }
  }
  return writePieces(path, '', pieces(), onProgress)
}

/** A Postgres value as a cell: instants in ISO 8601, numerics as Postgres's exact text. */
const cellOf = (v: unknown): string | null => (v === null || v === undefined ? null : v instanceof Date ? v.toISOString() : String(v))

type Conversion = (file: string) => string

/** The SELECT that reads an intermediate JSONEachRow file of these columns, typed. */
const jsonConversion = (columns: ExportColumn[]): Conversion => (file) =>
  `SELECT * FROM file(${sqlString(file)}, 'JSONEachRow', ${sqlString(structureOf(columns))}) SETTINGS date_time_input_format = 'best_effort', ${PARQUET_SETTINGS}`

/**
 * Rows written to an intermediate file next to `path` (reporting progress), then converted to Parquet by ClickHouse
 * (chDB reads the file and writes the Parquet one: memory stays a block), the intermediate file removed.
 */
async function viaIntermediate(deps: Deps, path: string, onProgress: Progress, conversion: Conversion, write: (tmp: string, progress: Progress) => Promise<Written>): Promise<Written> {
  const tmp = `${path}.rows`
  try {
    await write(tmp, onProgress)
    await deps.ch.commandApart(`${conversion(tmp)} INTO OUTFILE ${sqlString(path)} TRUNCATE FORMAT Parquet`)
  } finally {
    await rm(tmp, { force: true })
  }
  return parquetWritten(path, onProgress)
}

type AnalyticsCsv = ReturnType<typeof analyticsExport>

function analyticsOf(deps: Deps, scope: Scope, start: Date, end: Date, f: Filters): AnalyticsCsv {
  return analyticsExport(deps, systemActor(scope), {
    start,
    end,
    externalCustomerId: f.external_customer_id as string | undefined,
    featureIds: f.feature_ids as string[] | undefined,
    sources: f.sources as string[] | undefined,
    groupBy: (f.group_by as string[] | undefined) ?? [],
    windowSize: f.window_size as WindowSize | undefined,
    expand: [],
    includeChildren: false,
    limit: 1000,
    offset: 0,
    metadataColumns: [],
    columnSets: [],
  })
}

function analyticsCsv(a: AnalyticsCsv, path: string, onProgress: Progress): Promise<Written> {
  return writePieces(path, csvHeader(a.columns), a.pieces(new AbortController().signal), onProgress)
}

/**
 * The analytics CSV read back typed: counts and amounts as numbers, text with the spreadsheet guard's leading quote
 * taken off again (a Parquet file is not opened by a spreadsheet).
 */
const analyticsCsvConversion = (a: AnalyticsCsv): Conversion => (file) => {
  const columns: ExportColumn[] = a.columns.map((c) => ({ name: c.name, kind: c.name === 'event_count' ? 'count' : c.kind === 'number' ? 'decimal' : c.name === 'window_start' ? 'time' : 'text' }))
  const cells = columns.map((c) => (c.kind === 'text' ? `if(match(\`${c.name}\`, '^\\'[=+\\\\-@\\t\\r]'), substring(\`${c.name}\`, 2), \`${c.name}\`) AS \`${c.name}\`` : `\`${c.name}\``))
  return `SELECT ${cells.join(', ')} FROM file(${sqlString(file)}, 'CSVWithNames', ${sqlString(structureOf(columns))}) SETTINGS date_time_input_format = 'best_effort', ${PARQUET_SETTINGS}`
}
