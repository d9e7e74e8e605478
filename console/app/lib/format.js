// Display helpers. Amounts stay the API's decimal strings: they are shown, compared and summed as
// decimals (decimal.js), never rounded through floating point (charts are the one place numbers become floats).
import Decimal from 'decimal.js'

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' })
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' })

export const when = (iso) => (iso ? dateTime.format(new Date(iso)) : '—')
export const day = (iso) => (iso ? dateOnly.format(new Date(iso)) : '—')

/** "1234.5" → "1,234.5", keeping every digit the API sent. */
export function decimal(value) {
  if (value === null || value === undefined || value === '') return '—'
  const [int, frac] = String(value).split('.')
  const sign = int.startsWith('-') ? '-' : ''
  const digits = int.replace('-', '').replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return `${sign}${digits}${frac ? `.${frac}` : ''}`
}

/** "147.7" USD → "147.70 USD" (two places at least, more when the API sent more). */
export function money(value, currency = '') {
  if (value === null || value === undefined || value === '') return '—'
  const [int, frac = ''] = String(value).split('.')
  return `${decimal(`${int}.${frac.padEnd(2, '0')}`)}${currency ? ` ${currency}` : ''}`
}

/** Compares two decimal strings exactly: -1, 0 or 1. */
export const compareDecimal = (a, b) => new Decimal(String(a).trim()).comparedTo(String(b).trim())

/** Adds two decimal strings exactly ("0.1" + "0.2" = "0.3"). */
export const addDecimal = (a, b) => new Decimal(a).plus(b).toFixed()

/** The exact sum of decimal strings, as a decimal string. */
export const sumDecimal = (xs) => xs.reduce((s, v) => s.plus(v), new Decimal(0)).toFixed()

export const isDecimal = (s) => /^\d+(\.\d+)?$/.test(String(s).trim())
