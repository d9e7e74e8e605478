// What `meterbill export` shows on stderr while CSV streams to stdout, pure: records counted as the bytes pass (a
// quoted cell may hold line breaks, so a record ends at a line break outside quotes), and the progress line.

/** Counts CSV records in text given in pieces: line breaks outside quotes (a doubled quote toggles twice). */
export function csvRecordCounter(): { add(text: string): void; readonly records: number } {
  let quoted = false
  let records = 0
  return {
    add(text: string) {
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i)
        if (c === 34) quoted = !quoted
        else if (c === 10 && !quoted) records++
      }
    },
    get records() {
      return records
    },
  }
}

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB']

/** Bytes in decimal units, one decimal from KB on: `999 B`, `1.5 MB`. */
export function formatBytes(bytes: number): string {
  let value = bytes
  let unit = 0
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000
    unit++
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${UNITS[unit]}`
}

/** `12,345 rows · 1.2 MB · 6,172 rows/s` after `elapsedMs`; rows exclude the header record. */
export function progressLine(rows: number, bytes: number, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? Math.round((rows * 1000) / elapsedMs) : 0
  return `${rows.toLocaleString('en-US')} rows · ${formatBytes(bytes)} · ${rate.toLocaleString('en-US')} rows/s`
}
