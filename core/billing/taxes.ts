// Taxes: each rate is computed once on its taxable total (the lines' amounts after all discounts) and
// rounded once, never per line, so a rate's tax is the rate of the total to the cent. Rates add; none
// is computed on another's tax (no compounding). Each rate's tax is then split over its lines (pro rata,
// remainder on the largest line), which credit notes and prepaid credits need.
import { validationError } from '../errors.ts'
import { D, roundMoney, sumMoney, type Decimal } from '../money.ts'
import { allocate, moneyAmount, percentage } from './amounts.ts'

/** The fields of the spec's TaxRate the engine uses. A fixed value is in the invoice's currency. */
export type TaxRate = {
  id: string
  tax_rate_type: 'percentage' | 'fixed'
  percentage_value?: string | null
  fixed_value?: string | null
}

/** A rate on an invoice: on every line, or only on `line_indexes`. */
export type TaxUse = { rate: TaxRate; tax_association_id?: string; line_indexes?: number[] }

/** The spec's TaxApplied amounts. */
export type TaxApplied = {
  tax_rate_id: string
  tax_association_id: string | null
  currency: string
  taxable_amount: Decimal
  tax_amount: Decimal
}

export type Taxes = { taxes: TaxApplied[]; total_tax: Decimal; /** Per line, its share of every rate. */ line_tax: Decimal[] }

/**
 * percentage: round(taxable × p / 100), signed, so a net credit gets its tax back.
 * fixed: the fixed value once per invoice, only when there is something positive to tax (a zero
 * invoice, like a trial's, stays zero).
 */
export function taxAmount(rate: TaxRate, taxable: Decimal, currency: string): Decimal {
  if (rate.tax_rate_type === 'percentage') return roundMoney(taxable.times(percentage(rate.percentage_value, 'percentage_value')).div(100), currency)
  if (rate.tax_rate_type !== 'fixed') throw validationError('tax_rate_type', `unknown tax rate type ${JSON.stringify(rate.tax_rate_type)}`)
  const value = moneyAmount(rate.fixed_value ?? '', currency, 'fixed_value')
  return taxable.gt(0) ? value : new D(0)
}

/** `taxable`: per line, its rounded amount minus its discounts. */
export function applyTaxes(taxable: Decimal[], uses: TaxUse[], currency: string): Taxes {
  const lineTax = taxable.map(() => new D(0))
  const taxes = uses.map((use): TaxApplied => {
    const scope = use.line_indexes ?? taxable.map((_, i) => i)
    for (const i of scope) if (!Number.isInteger(i) || i < 0 || i >= taxable.length) throw validationError('line_indexes', `no invoice line ${i} for tax rate ${use.rate.id}`)
    const base = sumMoney(scope.map((i) => taxable[i]))
    const tax = taxAmount(use.rate, base, currency)
    allocate(tax, scope.map((i) => D.max(0, taxable[i])), currency).forEach((share, k) => (lineTax[scope[k]] = lineTax[scope[k]].plus(share)))
    return { tax_rate_id: use.rate.id, tax_association_id: use.tax_association_id ?? null, currency, taxable_amount: base, tax_amount: tax }
  })
  return { taxes, total_tax: sumMoney(taxes.map((t) => t.tax_amount)), line_tax: lineTax }
}

const sameValue = (a: string | null | undefined, b: string | null | undefined): boolean => (a ?? null) === (b ?? null) || (a != null && b != null && new D(a).eq(b))
const sameRate = (a: TaxRate, b: TaxRate): boolean =>
  a.id === b.id && a.tax_rate_type === b.tax_rate_type && sameValue(a.percentage_value, b.percentage_value) && sameValue(a.fixed_value, b.fixed_value)

/**
 * The rates of an invoice some of whose lines carry rates of their own (a usage adjustment keeps its original
 * invoice's; `[]` taxes the line with nothing): each distinct rate once, on the lines it taxes — the invoice's rates
 * on the lines without rates of their own. A rate on every line has no `line_indexes`, so an invoice without such
 * lines is taxed exactly as before; a rate on no line is left out.
 */
export function ratesByLine<R extends TaxRate>(invoiceRates: R[], own: (R[] | undefined)[]): { rate: R; line_indexes?: number[] }[] {
  if (own.every((o) => o === undefined)) return invoiceRates.map((rate) => ({ rate }))
  const uses: { rate: R; line_indexes: number[] }[] = invoiceRates.map((rate) => ({ rate, line_indexes: [] }))
  own.forEach((rates, i) => {
    for (const rate of rates ?? invoiceRates) {
      const use = uses.find((u) => sameRate(u.rate, rate)) ?? uses[uses.push({ rate, line_indexes: [] }) - 1]
      use.line_indexes.push(i)
    }
  })
  return uses.filter((u) => u.line_indexes.length > 0).map((u) => (u.line_indexes.length === own.length ? { rate: u.rate } : u))
}
