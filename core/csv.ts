// CSV text for exports, pure: RFC 4180 rows and cells made safe to open in a spreadsheet.
//
// - A row is its cells joined by commas and ended by CRLF. A cell holding a comma, a double quote, a CR or an LF is
//   enclosed in double quotes, its quotes doubled; every other cell is written as it is (an empty cell for null).
// - Formula injection: a spreadsheet runs a cell that begins with `=`, `+`, `-` or `@` as a formula, and Excel also
//   one that begins with a tab or a CR followed by one. Such a text cell is written with a single quote in front
//   (`=SUM(A1)` → `'=SUM(A1)`), which spreadsheets show as text (OWASP's advice), then quoted as above if it must be.
// - Numbers are not text: a Decimal, a finite number or a bigint is written as a plain decimal (`-12.5`, never
//   `1e-7`), and in a column declared numeric a string that is a plain decimal (`-?digits[.digits]`) stays as it is.
//   A plain decimal cannot be a formula, and a quote in front of a negative amount would turn it into text. Any
//   other string in a numeric column (`-1+2`, `=1`, `+5`) is neutralized like text.
// - A text cell that merely looks numeric (`-12` as a customer id) is neutralized too: in a text column the value
//   is data to keep as it was, and the quote keeps it text.
import { D, type Decimal } from './money.ts'

export type CsvKind = 'text' | 'number'

export type CsvValue = string | number | bigint | boolean | Decimal | null | undefined

export interface CsvColumn {
  name: string
  /** Default text. */
  kind?: CsvKind
}

const NEEDS_QUOTES = /[",\r\n]/
/** What a spreadsheet may read as the start of a formula. */
const FORMULA_START = /^[=+\-@\t\r]/
const PLAIN_DECIMAL = /^-?\d+(\.\d+)?$/

const isDecimal = (v: object): v is Decimal => typeof (v as Decimal).toFixed === 'function' && typeof (v as Decimal).isFinite === 'function'

/** RFC 4180 quoting of a finished cell text. */
export function quoteCsv(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/** A cell's text: neutralized when it could start a formula, then quoted when RFC 4180 requires it. */
export function csvCell(value: CsvValue, kind: CsvKind = 'text'): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`csvCell: ${value} is not a finite number`)
    // String(1e-7) is "1e-7": the shortest digits that give the number back, written without an exponent.
    return new D(String(value)).toFixed()
  }
  if (typeof value === 'object') {
    if (!isDecimal(value) || !value.isFinite()) throw new RangeError('csvCell: not a finite Decimal')
    return value.toFixed()
  }
  if (kind === 'number' && PLAIN_DECIMAL.test(value)) return value
  return quoteCsv(FORMULA_START.test(value) ? `'${value}` : value)
}

/** One record: its cells, each of its column's kind (text when not given), and CRLF. */
export function csvRow(values: readonly CsvValue[], kinds: readonly CsvKind[] = []): string {
  let line = ''
  for (let i = 0; i < values.length; i++) line += (i === 0 ? '' : ',') + csvCell(values[i], kinds[i] ?? 'text')
  return `${line}\r\n`
}

/** The header record: the columns' names, neutralized and quoted like any text cell. */
export function csvHeader(columns: readonly CsvColumn[]): string {
  return csvRow(columns.map((c) => c.name))
}

/** A writer of records for `columns`: rows are given as values in the columns' order. */
export function csvWriter(columns: readonly CsvColumn[]): { header: string; row(values: readonly CsvValue[]): string } {
  const kinds = columns.map((c) => c.kind ?? 'text')
  return {
    header: csvHeader(columns),
    row: (values) => {
      if (values.length !== columns.length) throw new RangeError(`csv row: ${values.length} values for ${columns.length} columns`)
      return csvRow(values, kinds)
    },
  }
}

/** Records after the header, already CSV, and how many rows they hold: what an export streams. */
export interface CsvPiece {
  bytes: Uint8Array | string
  rows: number
}

/** Text is handed on in pieces of about this many characters: one write per row would cost more than the row. */
const CHUNK = 64 * 1024

/** Rows written through csvWriter (values in the columns' order), joined into pieces of about CHUNK characters. */
export async function* csvPieces(columns: readonly CsvColumn[], rows: AsyncIterable<readonly CsvValue[]>): AsyncGenerator<CsvPiece> {
  const writer = csvWriter(columns)
  let text = ''
  let count = 0
  for await (const row of rows) {
    text += writer.row(row)
    count++
    if (text.length >= CHUNK) {
      yield { bytes: text, rows: count }
      text = ''
      count = 0
    }
  }
  if (count > 0) yield { bytes: text, rows: count }
}
