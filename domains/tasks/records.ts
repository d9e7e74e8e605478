// An import file's records, read a piece at a time: CSV (a header row, then one record per row) or JSON Lines (file
// type JSON: one object per line). Records are numbered from 1 (CSV: the first after the header); a record that cannot
// be read (bad JSON, a cell that should hold JSON) comes with its errors instead of a value.
import { CsvReader, csvRecord, LineReader } from '../../core/csv-read.ts'
import type { FileType } from './store.ts'
import { TaskFailure } from './source.ts'

export interface ImportRecord {
  row: number
  value: Record<string, unknown>
  errors: Record<string, string>
  /** The record's size in the file, roughly: intake's batch limits count it. */
  bytes: number
}

async function* csvRecords(text: AsyncIterable<string>, kinds: Readonly<Record<string, 'json' | 'integer'>>): AsyncIterable<ImportRecord> {
  const reader = new CsvReader()
  let header: string[] | undefined
  let row = 0
  const records = function* (cells: string[][]): Iterable<ImportRecord> {
    for (const c of cells) {
      if (!header) {
        header = c.map((h) => h.trim())
        const blank = header.findIndex((h) => h === '')
        if (blank >= 0) throw new TaskFailure(`the CSV header's column ${blank + 1} has no name`)
        continue
      }
      const { value, errors } = csvRecord(header, c, kinds)
      yield { row: ++row, value, errors, bytes: c.reduce((n, cell) => n + cell.length + 1, 0) }
    }
  }
  try {
    for await (const piece of text) yield* records(reader.push(piece))
    yield* records(reader.end())
  } catch (err) {
    if (err instanceof TaskFailure) throw err
    throw new TaskFailure(`the CSV file cannot be read after record ${row}: ${(err as Error).message}`)
  }
}

async function* jsonLines(text: AsyncIterable<string>): AsyncIterable<ImportRecord> {
  const reader = new LineReader()
  let row = 0
  const records = function* (lines: string[]): Iterable<ImportRecord> {
    for (const line of lines) {
      row++
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        yield { row, value: {}, errors: { row: 'is not valid JSON' }, bytes: line.length }
        continue
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) yield { row, value: {}, errors: { row: 'must be a JSON object' }, bytes: line.length }
      else yield { row, value: value as Record<string, unknown>, errors: {}, bytes: line.length }
    }
  }
  for await (const piece of text) yield* records(reader.push(piece))
  yield* records(reader.end())
}

export function importRecords(text: AsyncIterable<string>, fileType: FileType, kinds: Readonly<Record<string, 'json' | 'integer'>>): AsyncIterable<ImportRecord> {
  return fileType === 'CSV' ? csvRecords(text, kinds) : jsonLines(text)
}

/** How many records the file holds; a file that cannot be read to its end fails here, before anything is written. */
export async function countRecords(text: AsyncIterable<string>, fileType: FileType, kinds: Readonly<Record<string, 'json' | 'integer'>>): Promise<number> {
  let n = 0
  for await (const _ of importRecords(text, fileType, kinds)) n++
  return n
}
