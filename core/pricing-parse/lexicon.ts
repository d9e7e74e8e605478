// The words of a pricing description: currencies (symbols, ISO codes, names), numbers with their
// magnitudes ("10k", "1.5 million", "49,90"), billing periods ("/mo", "annually", "every 3 months")
// and units (what a usage price counts, which units are seats, which are quantities to sum).
import { validationError } from '../errors.ts'
import { D, type Decimal } from '../money.ts'
import type { BillingPeriod } from '../periods.ts'

/** The ISO 4217 codes in use (Intl knows them: 162 on Node 20, no historic ones). */
export const ISO_CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'))

/** Symbols, longest first so "US$" wins over "$". ¥ is read as JPY (a warning says so: CNY is written CNY). */
const SYMBOLS: [string, string][] = [
  ['US$', 'USD'], ['CA$', 'CAD'], ['AU$', 'AUD'], ['NZ$', 'NZD'], ['HK$', 'HKD'], ['SG$', 'SGD'], ['MX$', 'MXN'],
  ['C$', 'CAD'], ['A$', 'AUD'], ['S$', 'SGD'], ['R$', 'BRL'],
  ['$', 'USD'], ['€', 'EUR'], ['£', 'GBP'], ['¥', 'JPY'], ['₹', 'INR'], ['₩', 'KRW'], ['₽', 'RUB'], ['₺', 'TRY'],
  ['₪', 'ILS'], ['₫', 'VND'], ['₱', 'PHP'], ['₴', 'UAH'], ['₦', 'NGN'], ['฿', 'THB'], ['zł', 'PLN'],
]

/** Currency names written after an amount ("49 euros"). */
const NAMES: Record<string, string> = {
  dollar: 'USD', dollars: 'USD', usd: 'USD', euro: 'EUR', euros: 'EUR', pound: 'GBP', pounds: 'GBP', yen: 'JPY',
  rupee: 'INR', rupees: 'INR', franc: 'CHF', francs: 'CHF',
}

/** Money people write that is no ISO 4217 currency: refused by name rather than read as a unit. */
const NOT_CURRENCIES = new Set(['btc', 'bitcoin', 'bitcoins', 'sats', 'satoshi', 'satoshis', 'eth', 'ether', 'usdt', 'usdc', 'doge', 'dogecoin', 'doubloon', 'doubloons', 'ducat', 'ducats'])

/** Written after an amount, these name several currencies; the description must say which. */
const AMBIGUOUS: Record<string, string> = { kr: 'SEK, NOK, DKK or ISK', 'kr.': 'SEK, NOK, DKK or ISK' }

/** Letters that name no currency although they are three capitals next to a number. */
const CAPITAL_WORDS = new Set(['API', 'SMS', 'MAU', 'DAU', 'CPU', 'GPU', 'RAM', 'SSD', 'SSO', 'SLA', 'SEO', 'MMS', 'VPS', 'DNS', 'CDN', 'LLM', 'TPS', 'RPS', 'QPS', 'KWH', 'GBS'])

export interface CurrencyMark {
  /** ISO code, or null for a bare amount ("49 per month"), which takes the description's currency. */
  currency: string | null
  /** Amounts in cents ("30¢") are divided by 100. */
  cents?: boolean
}

export function symbolAt(text: string, i: number): { symbol: string; currency: string } | undefined {
  for (const [symbol, currency] of SYMBOLS) if (text.startsWith(symbol, i)) return { symbol, currency }
  return undefined
}

/**
 * A word read as a currency next to an amount; refuses the ones we do not take, naming them. Three capitals
 * that are no ISO code are refused only where the amount reads as a price (`priced`: "49 XYZ/month"), so
 * "100 PDF pages" stays a quantity of pages.
 */
export function currencyWord(word: string, priced: boolean): CurrencyMark | undefined {
  const lower = word.toLowerCase()
  if (NOT_CURRENCIES.has(lower)) throw unknownCurrency(word)
  if (AMBIGUOUS[lower]) throw validationError('currency', `"${word}" may be ${AMBIGUOUS[lower]}: write the ISO code`)
  if (lower === 'cents' || lower === 'cent') return { currency: null, cents: true }
  if (NAMES[lower]) return { currency: NAMES[lower] }
  if (/^[A-Z]{3}$/.test(word)) {
    if (ISO_CURRENCIES.has(word)) return { currency: word }
    if (priced && !CAPITAL_WORDS.has(word)) throw unknownCurrency(word)
  }
  return undefined
}

export const unknownCurrency = (what: string) =>
  validationError('currency', `${JSON.stringify(what)} is not a currency we know: use an ISO 4217 code (USD, EUR, …) or its symbol`)

// ---- numbers --------------------------------------------------------------------------------------------

const MAGNITUDES: Record<string, number> = {
  k: 1e3, thousand: 1e3, m: 1e6, mm: 1e6, mn: 1e6, mil: 1e6, million: 1e6, millions: 1e6, b: 1e9, bn: 1e9, billion: 1e9, billions: 1e9,
}

/** "10,000" and "1.5" as written; "49,90" (a decimal comma) as 49.90. Undefined when it is no number. */
export function plainNumber(written: string): Decimal | undefined {
  if (/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(written)) return new D(written.replace(/,/g, ''))
  if (/^\d+(\.\d+)?$/.test(written)) return new D(written)
  if (/^\d+,\d{1,2}$/.test(written)) return new D(written.replace(',', '.'))
  return undefined
}

/** The factor of a magnitude suffix or word ("k", "million"); undefined for anything else. */
export const magnitude = (word: string): number | undefined => MAGNITUDES[word.toLowerCase()]

// ---- periods --------------------------------------------------------------------------------------------

export interface Period {
  period: BillingPeriod
  count: number
}

const PERIOD_NOUNS: Record<string, BillingPeriod> = {
  day: 'DAILY', days: 'DAILY', week: 'WEEKLY', weeks: 'WEEKLY', wk: 'WEEKLY', month: 'MONTHLY', months: 'MONTHLY', mo: 'MONTHLY',
  mos: 'MONTHLY', mth: 'MONTHLY', quarter: 'QUARTERLY', quarters: 'QUARTERLY', qtr: 'QUARTERLY', year: 'ANNUAL', years: 'ANNUAL',
  yr: 'ANNUAL', yrs: 'ANNUAL', annum: 'ANNUAL',
}

const PERIOD_ADVERBS: Record<string, BillingPeriod> = {
  daily: 'DAILY', weekly: 'WEEKLY', monthly: 'MONTHLY', quarterly: 'QUARTERLY', yearly: 'ANNUAL', annually: 'ANNUAL', annual: 'ANNUAL',
  'semi-annually': 'HALF_YEARLY', 'half-yearly': 'HALF_YEARLY', 'semi-annual': 'HALF_YEARLY', 'half-year': 'HALF_YEARLY',
}

export const periodNoun = (word: string): BillingPeriod | undefined => PERIOD_NOUNS[word.toLowerCase()]
export const periodAdverb = (word: string): BillingPeriod | undefined => PERIOD_ADVERBS[word.toLowerCase()]

/** "every 3 months" is QUARTERLY, "every 6 months" HALF_YEARLY, "every 2 weeks" WEEKLY × 2. */
export function everyPeriod(count: number, period: BillingPeriod): Period {
  if (period === 'MONTHLY' && count === 3) return { period: 'QUARTERLY', count: 1 }
  if (period === 'MONTHLY' && count === 6) return { period: 'HALF_YEARLY', count: 1 }
  if (period === 'MONTHLY' && count === 12) return { period: 'ANNUAL', count: 1 }
  return { period, count }
}

// ---- units ----------------------------------------------------------------------------------------------

/** Units a FIXED price is multiplied by (the line item's quantity), not metered from events. */
const SEATS = new Set(['seat', 'user', 'member', 'license', 'licence', 'agent', 'editor', 'teammate', 'host', 'node', 'server', 'instance', 'workspace', 'location', 'device', 'admin', 'collaborator', 'employee', 'creator'])

/** Things a plan allows a number of, that no event counts: their limits are static features ("Projects: 5"). */
const GAUGES = new Set(['project', 'workspace', 'seat', 'user', 'member', 'site', 'domain', 'app', 'environment', 'repository', 'repo', 'dashboard', 'integration', 'team', 'location', 'collaborator', 'organization', 'org', 'store', 'channel', 'board'])

/** Units that are an amount carried by each event (summed), not one per event (counted). */
const QUANTITIES = new Set(['token', 'gb', 'gib', 'gigabyte', 'mb', 'mib', 'megabyte', 'tb', 'tib', 'terabyte', 'kb', 'byte', 'minute', 'min', 'hour', 'hr', 'second', 'sec', 'character', 'char', 'credit', 'word', 'kwh', 'mile', 'km', 'gb-hour', 'gb-month', 'vcpu-hour', 'cpu-hour', 'gpu-hour', 'compute-hour', 'gb-second', 'ms'])

/** Words that end a unit phrase ("API calls then …", "GB per month"). */
export const UNIT_STOP = new Set([
  'per', 'at', 'for', 'then', 'after', 'above', 'over', 'beyond', 'up', 'to', 'included', 'include', 'includes', 'including', 'free', 'each',
  'and', 'or', 'on', 'in', 'with', 'a', 'an', 'the', 'is', 'are', 'cost', 'costs', 'plus', 'only', 'thereafter', 'extra', 'additional',
  'billed', 'charged', 'priced', 'from', 'until', 'under', 'below', 'more', 'than', 'next', 'first', 'every', 'no', 'pro', 'prorated',
  'rata', 'that', 'this', 'it', 'all', 'units', 'unit', 'monthly', 'yearly', 'annually', 'weekly', 'daily', 'quarterly',
])

const IRREGULAR: Record<string, string> = { licences: 'licence', licenses: 'license', indices: 'index', people: 'person', statuses: 'status', analyses: 'analysis' }

/** "calls" → "call", "messages" → "message", "queries" → "query"; short words and "-ss" words stay. */
export function singular(word: string): string {
  const w = word.toLowerCase()
  if (IRREGULAR[w]) return IRREGULAR[w]
  if (w.length <= 3 || w.endsWith('ss') || w.endsWith('us') || w.endsWith('is')) return w
  if (w.endsWith('ies')) return `${w.slice(0, -3)}y`
  if (/(ches|shes|xes|sses|zzes)$/.test(w)) return w.slice(0, -2)
  if (w.endsWith('s')) return w.slice(0, -1)
  return w
}

export const isSeat = (word: string): boolean => SEATS.has(singular(word))
export const isGauge = (word: string): boolean => GAUGES.has(singular(word))
export const isQuantity = (word: string): boolean => QUANTITIES.has(singular(word))

/** snake_case of words: "API calls" → "api_calls". */
export const slug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60) || 'item'

/** A plan name as people write plans: first letter capital, the rest as written ("pro" → "Pro", "SSO" stays). */
export const titled = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1)

/** Plan names recognised without the word "plan" after them. */
export const PLAN_NAMES = new Set([
  'free', 'hobby', 'starter', 'basic', 'lite', 'essentials', 'standard', 'plus', 'pro', 'professional', 'premium', 'team', 'teams',
  'business', 'growth', 'scale', 'startup', 'developer', 'advanced', 'ultimate', 'enterprise', 'personal', 'individual', 'agency', 'max',
])
