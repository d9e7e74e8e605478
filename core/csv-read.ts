// Reading CSV (RFC 4180) and JSON Lines a piece at a time, pure: an import file streams through these without being
// held whole. Fields may be quoted ("a, b", doubled quotes inside), quoted fields may span lines, rows end with LF
// or CRLF, a UTF-8 byte order mark at the start is dropped, and blank lines are skipped.

/** Splits text given in pieces into CSV records (arrays of cells). */
export class CsvReader {
  private cell = ''
  private row: string[] = []
  private quoted = false
  /** A quote just closed a quoted cell, or was seen inside one and may be the first of a doubled pair. */
  private quoteSeen = false
  private started = false
  private cellStarted = false

  /** The records completed by `text`. */
  push(text: string): string[][] {
    if (!this.started && text.length > 0) {
      this.started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    const out: string[][] = []
    for (let i = 0; i < text.length; i++) {
      const c = text[i]
      if (this.quoted) {
        if (this.quoteSeen) {
          this.quoteSeen = false
          if (c === '"') {
            this.cell += '"'
            continue
          }
          this.quoted = false
        } else if (c === '"') {
          this.quoteSeen = true
          continue
        } else {
          this.cell += c
          continue
        }
      }
      if (c === '"' && !this.cellStarted) {
        this.quoted = true
        this.cellStarted = true
      } else if (c === ',') {
        this.endCell()
      } else if (c === '\n') {
        this.endRow(out)
      } else if (c === '\r') {
        // CR of a CRLF: the LF ends the row.
      } else {
        this.cell += c
        this.cellStarted = true
      }
    }
    return out
  }

  /** The last record, when the text did not end with a line break. */
  end(): string[][] {
    if (this.quoted && this.quoteSeen) this.quoted = false
    if (this.quoted) throw new Error('the file ends inside a quoted field')
    const out: string[][] = []
    this.endRow(out)
    return out
  }

  private endCell(): void {
    this.row.push(this.cell)
    this.cell = ''
    this.cellStarted = false
  }

  private endRow(out: string[][]): void {
    this.endCell()
    const row = this.row
    this.row = []
    if (row.length > 1 || row[0] !== '') out.push(row)
  }
}

/** Splits text given in pieces into its non-blank lines (JSON Lines records). */
export class LineReader {
  private rest = ''
  private started = false

  push(text: string): string[] {
    if (!this.started && text.length > 0) {
      this.started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    const lines = (this.rest + text).split('\n')
    this.rest = lines.pop()!
    return lines.filter((l) => l.trim() !== '')
  }

  end(): string[] {
    const last = this.rest
    this.rest = ''
    return last.trim() === '' ? [] : [last]
  }
}

/**
 * A CSV record as an object by the header's column names: empty cells are left out, `a.b` columns fill the object
 * `a` (`metadata.tier`, `properties.tokens`), cells of `json` columns are read as JSON (an object or list in one cell)
 * and whole numbers in `integer` columns become numbers (anything else stays text, for the schema to refuse). A cell
 * that is not valid JSON is named in the answer's `errors`.
 */
export function csvRecord(header: string[], cells: string[], kinds: Readonly<Record<string, 'json' | 'integer'>>): { value: Record<string, unknown>; errors: Record<string, string> } {
  const value: Record<string, unknown> = {}
  const errors: Record<string, string> = {}
  if (cells.length > header.length) errors[`column ${header.length + 1}`] = `the row has ${cells.length} cells, the header ${header.length} columns`
  header.forEach((name, i) => {
    const cell = cells[i]
    if (cell === undefined || cell === '') return
    const dot = name.indexOf('.')
    if (dot > 0) {
      const parent = name.slice(0, dot)
      const nested = (value[parent] ??= {}) as Record<string, unknown>
      if (typeof nested === 'object' && nested !== null && !Array.isArray(nested)) nested[name.slice(dot + 1)] = cell
      else errors[name] = `${parent} is given both as a column and as ${parent}.* columns`
    } else if (kinds[name] === 'integer' && /^-?\d{1,15}$/.test(cell)) {
      value[name] = Number(cell)
    } else if (kinds[name] === 'json') {
      try {
        value[name] = JSON.parse(cell)
      } catch {
        errors[name] = 'must be JSON (an object or a list in one cell)'
      }
    } else value[name] = cell
  })
  return { value, errors }
}
