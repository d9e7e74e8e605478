// Display helpers. Amounts stay the API's decimal strings: they are shown, compared and summed as
// decimals, never rounded through floating point (charts are the one place numbers become floats).

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
export function compareDecimal(a, b) {
  const scale = (s) => {
    const [i, f = ''] = String(s).trim().split('.')
    return { i, f }
  }
  const x = scale(a)
  const y = scale(b)
  const places = Math.max(x.f.length, y.f.length)
  const big = (v) => BigInt(v.i + v.f.padEnd(places, '0'))
  const d = big(x) - big(y)
  return d < 0n ? -1 : d > 0n ? 1 : 0
}

/** Adds two decimal strings exactly ("0.1" + "0.2" = "0.3"). */
export function addDecimal(a, b) {
  const [ai, af = ''] = String(a).split('.')
  const [bi, bf = ''] = String(b).split('.')
  const places = Math.max(af.length, bf.length)
  const sum = BigInt(ai + af.padEnd(places, '0')) + BigInt(bi + bf.padEnd(places, '0'))
  const negative = sum < 0n
  const digits = (negative ? -sum : sum).toString().padStart(places + 1, '0')
  const out = places ? `${digits.slice(0, -places)}.${digits.slice(-places)}` : digits
  return negative ? `-${out}` : out
}

export const isDecimal = (s) => /^\d+(\.\d+)?$/.test(String(s).trim())
