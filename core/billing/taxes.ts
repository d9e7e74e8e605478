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
