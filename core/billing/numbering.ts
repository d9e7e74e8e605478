// Invoice and credit note numbers, formatting only: the gap-free sequence value comes from Postgres.
// A template holds text and placeholders: {YYYY} {YY} {MM} {DD} of the document date (in a time zone,
// UTC by default) and exactly one {SEQ} or {SEQ:n} (zero-padded to n digits, never truncated).
import { DateTime } from 'luxon'

export const INVOICE_NUMBER_TEMPLATE = 'INV-{YYYY}{MM}-{SEQ:5}'
export const CREDIT_NOTE_NUMBER_TEMPLATE = 'CN-{YYYY}{MM}-{SEQ:5}'

const PLACEHOLDER = /\{([A-Z]+)(?::(\d+))?\}/g

function render(template: string, date: Date, timeZone: string, seq: (width: number) => string): string {
  const dt = DateTime.fromJSDate(date, { zone: timeZone })
  if (!dt.isValid) throw new RangeError(`invalid date or time zone: ${dt.invalidExplanation ?? timeZone}`)
  const fields: Record<string, string> = { YYYY: dt.toFormat('yyyy'), YY: dt.toFormat('yy'), MM: dt.toFormat('MM'), DD: dt.toFormat('dd') }
  if ((template.match(/\{SEQ(:\d+)?\}/g) ?? []).length !== 1) throw new RangeError(`number template needs exactly one {SEQ}: ${JSON.stringify(template)}`)
  return template.replace(PLACEHOLDER, (whole, name: string, width?: string) => {
    if (name === 'SEQ') {
      const n = width === undefined ? 1 : Number(width)
      if (n < 1 || n > 20) throw new RangeError(`{SEQ:n} needs 1 ≤ n ≤ 20, got ${whole}`)
      return seq(n)
    }
    if (width !== undefined || !(name in fields)) throw new RangeError(`unknown placeholder ${whole} in number template`)
    return fields[name]
  })
}

/** e.g. formatNumber(INVOICE_NUMBER_TEMPLATE, 1, 2024-05-10) → "INV-202405-00001". */
export function formatNumber(template: string, sequence: number, date: Date, timeZone = 'UTC'): string {
  if (!Number.isSafeInteger(sequence) || sequence < 1) throw new RangeError(`sequence must be a positive integer, got ${sequence}`)
  return render(template, date, timeZone, (width) => String(sequence).padStart(width, '0'))
}

/**
 * The number without its sequence ("INV-202405-"): the key of the sequence in the store, so that a
 * template with {YYYY}{MM} restarts at 1 every month and one without dates never restarts.
 */
export function numberScope(template: string, date: Date, timeZone = 'UTC'): string {
  return render(template, date, timeZone, () => '')
}
