// CSV cells written by ClickHouse as core/csv.ts writes them, for exports whose bytes pass through unparsed.
//
// ClickHouse's CSV format quotes every string (RFC 4180 allows it; the raw-events export uses it), where core/csv.ts
// quotes only a cell that needs it: an export that must equal core/csv.ts byte for byte builds each record as one
// string here and streams it with `format: 'TabSeparatedRaw'` (ClickHouse.streamCsv), which writes it as it is.

/**
 * A text's `'` in front when a spreadsheet could run it as a formula (`=`, `+`, `-`, `@`, tab, CR first): core/csv.ts's
 * FORMULA_START, whose characters are one byte each in UTF-8, so the first byte decides as the first character does.
 */
export const neutralizedSql = (col: string): string => `if(substring(${col}, 1, 1) IN ('=', '+', '-', '@', '\\t', '\\r'), concat('\\'', ${col}), ${col})`

/** A text cell as core/csv.ts's csvCell writes it: empty for NULL, neutralized, then quoted (quotes doubled) when it holds `"`, `,`, CR or LF. */
export const csvTextSql = (col: string): string => {
  const text = neutralizedSql(`assumeNotNull(${col})`)
  return `if(isNull(${col}), '', if(multiSearchAny(${text}, ['"', ',', '\\r', '\\n']), concat('"', replaceAll(${text}, '"', '""'), '"'), ${text}))`
}
