import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { D, type Decimal } from '../money.ts'
import {
  applyConsumption,
  balanceInCurrency,
  balanceOf,
  creditsToCurrency,
  expiredAt,
  openCredits,
  planDebit,
  type Consumption,
  type CreditReason,
  type CreditTx,
  type WalletTransaction,
} from './ledger.ts'

const d = (s: string): Date => new Date(s)
const credit = (id: string, reason: CreditReason, credits: string, priority: number | null, expiry: string | null, created: string, available = credits): CreditTx => ({
  id,
  type: 'credit',
  reason,
  credits: new D(credits),
  credits_available: new D(available),
  priority,
  expiry_date: expiry === null ? null : d(expiry),
  created_at: d(created),
})
const show = (cs: Consumption[]): string[] => cs.map((c) => `${c.credit_id}:${c.credits.toFixed()}`)
const expectDec = (actual: Decimal, expected: string) => expect(actual.toFixed()).toBe(new D(expected).toFixed())

// The worked example of docs/credits.md. Consumption order on 2025-01-15: C, B, A, E, D.
const WALLET: WalletTransaction[] = [
  credit('A', 'FREE_CREDIT_GRANT', '30', 2, '2025-03-01T00:00:00Z', '2025-01-01T00:00:00Z'),
  credit('B', 'PURCHASED_CREDIT_DIRECT', '20', 1, null, '2025-01-05T00:00:00Z'),
  credit('C', 'PURCHASED_CREDIT_INVOICED', '50', 1, '2025-02-01T00:00:00Z', '2025-01-10T00:00:00Z'),
  credit('D', 'FREE_CREDIT_GRANT', '40', null, '2025-01-20T00:00:00Z', '2025-01-02T00:00:00Z'),
  credit('E', 'FREE_CREDIT_GRANT', '10', 2, '2025-03-01T00:00:00Z', '2025-01-03T00:00:00Z'),
  credit('F', 'CREDIT_NOTE', '25', 0, null, '2024-12-01T00:00:00Z', '0'), // used up
  credit('G', 'FREE_CREDIT_GRANT', '15', 0, '2025-01-10T00:00:00Z', '2024-12-10T00:00:00Z'), // expired, job not run yet
  { id: 'X', type: 'debit', reason: 'INVOICE_PAYMENT', credits: new D(25), created_at: d('2024-12-20T00:00:00Z') },
]
const JAN15 = d('2025-01-15T00:00:00Z')

describe('balanceOf', () => {
  // [at, credit_balance, free, purchased, open credits in consumption order]
  it.each([
    ['2025-01-15T00:00:00Z', '150', '80', '70', 'C B A E D'],
    ['2025-01-19T23:59:59.999Z', '150', '80', '70', 'C B A E D'],
    ['2025-01-20T00:00:00Z', '110', '40', '70', 'C B A E'], // D expires exactly now: gone
    ['2025-02-01T00:00:00Z', '60', '40', '20', 'B A E'],
    ['2025-03-01T00:00:00Z', '20', '0', '20', 'B'],
  ])('at %s: %s credits (free %s, purchased %s)', (at, total, free, purchased, order) => {
    const b = balanceOf(WALLET, d(at))
    expectDec(b.credit_balance, total)
    expectDec(b.credits_available_breakdown.free, free)
    expectDec(b.credits_available_breakdown.purchased, purchased)
    expect(openCredits(WALLET, d(at)).map((c) => c.id).join(' ')).toBe(order)
  })

  it('counts only what is left on a credit, not its original amount', () => {
    const b = balanceOf([credit('A', 'FREE_CREDIT_GRANT', '30', null, null, '2025-01-01T00:00:00Z', '12.5')], JAN15)
    expectDec(b.credit_balance, '12.5')
  })

  it('is zero for an empty wallet', () => {
    expectDec(balanceOf([], JAN15).credit_balance, '0')
  })
})

describe('consumption order: priority ascending (null last), then earliest expiry (never last), then oldest, then id', () => {
  // [credits as id:priority:expiry:created, expected order]
  it.each([
    ['higher priority number goes later', 'a:2:-:1 b:1:-:2', 'b a'],
    ['null priority after any number', 'a:-:-:1 b:100:-:2', 'b a'],
    ['same priority: earliest expiry first', 'a:1:20:1 b:1:10:2', 'b a'],
    ['never-expiring after expiring', 'a:1:-:1 b:1:28:2', 'b a'],
    ['same priority and expiry: oldest first', 'a:1:10:2 b:1:10:1', 'b a'],
    ['all equal: by id', 'b:1:10:1 a:1:10:1', 'a b'],
    ['priority beats expiry', 'a:1:-:1 b:2:5:1', 'a b'],
  ])('%s', (_, spec, expected) => {
    const day = (n: string): string => `2025-01-${n.padStart(2, '0')}T00:00:00Z`
    const credits = spec.split(' ').map((s) => {
      const [id, p, exp, created] = s.split(':')
      return credit(id, 'FREE_CREDIT_GRANT', '1', p === '-' ? null : Number(p), exp === '-' ? null : day(exp), day(created))
    })
    expect(openCredits(credits, d('2025-01-01T00:00:00Z')).map((c) => c.id).join(' ')).toBe(expected)
  })
})

describe('planDebit', () => {
  // [amount, consumed]; on 2025-01-15 the order is C 50, B 20, A 30, E 10, D 40 = 150
  it.each([
    ['0', []],
    ['30', ['C:30']],
    ['50', ['C:50']],
    ['60', ['C:50', 'B:10']],
    ['75', ['C:50', 'B:20', 'A:5']],
    ['100.25', ['C:50', 'B:20', 'A:30', 'E:0.25']],
    ['111', ['C:50', 'B:20', 'A:30', 'E:10', 'D:1']],
    ['150', ['C:50', 'B:20', 'A:30', 'E:10', 'D:40']],
  ])('debits %s as %j', (amount, consumed) => {
    for (const partial of [false, true]) {
      const plan = planDebit(WALLET, new D(amount), JAN15, { partial })
      expect(show(plan.consumed)).toEqual(consumed)
      expectDec(plan.debited, amount)
      expectDec(plan.shortfall, '0')
    }
  })

  it('refuses an explicit debit the credits cannot cover', () => {
    expect(() => planDebit(WALLET, new D('150.01'), JAN15)).toThrow(AppError)
    expect(() => planDebit(WALLET, new D('150.01'), JAN15)).toThrow(/insufficient credits/)
  })

  it('for an invoice (partial) takes all there is and reports the shortfall', () => {
    const plan = planDebit(WALLET, new D('200'), JAN15, { partial: true })
    expect(show(plan.consumed)).toEqual(['C:50', 'B:20', 'A:30', 'E:10', 'D:40'])
    expectDec(plan.debited, '150')
    expectDec(plan.shortfall, '50')
  })

  it('does not use a credit at its expiry instant', () => {
    const at = d('2025-01-20T00:00:00Z')
    expect(() => planDebit(WALLET, new D('111'), at)).toThrow(/insufficient/)
    expect(show(planDebit(WALLET, new D('110'), at).consumed)).toEqual(['C:50', 'B:20', 'A:30', 'E:10'])
    expect(show(planDebit(WALLET, new D('111'), new Date(at.getTime() - 1)).consumed)).toContain('D:1')
  })

  it('rejects a negative amount', () => {
    expect(() => planDebit(WALLET, new D('-1'), JAN15)).toThrow(RangeError)
  })
})

describe('expiredAt: a credit expiring exactly at `at` expires at `at`', () => {
  // [at, expired consumptions, in consumption order]
  it.each([
    ['2025-01-15T00:00:00Z', ['G:15']],
    ['2025-01-19T23:59:59.999Z', ['G:15']],
    ['2025-01-20T00:00:00Z', ['G:15', 'D:40']],
    ['2025-02-01T00:00:00Z', ['G:15', 'C:50', 'D:40']],
    ['2025-03-01T00:00:00Z', ['G:15', 'C:50', 'A:30', 'E:10', 'D:40']],
  ])('at %s: %j', (at, expected) => {
    expect(show(expiredAt(WALLET, d(at)))).toEqual(expected)
  })

  it('expires only what is left, and nothing of a used-up credit', () => {
    const w = [
      credit('a', 'FREE_CREDIT_GRANT', '30', null, '2025-01-10T00:00:00Z', '2025-01-01T00:00:00Z', '7'),
      credit('b', 'FREE_CREDIT_GRANT', '30', null, '2025-01-10T00:00:00Z', '2025-01-01T00:00:00Z', '0'),
    ]
    expect(show(expiredAt(w, JAN15))).toEqual(['a:7'])
  })
})

describe('applyConsumption', () => {
  it('lowers credits_available and leaves every other field and transaction alone', () => {
    const after = applyConsumption(WALLET, planDebit(WALLET, new D(75), JAN15).consumed)
    expect(after.map((t) => (t.type === 'credit' ? `${t.id}:${t.credits_available.toFixed()}` : t.id))).toEqual(['A:25', 'B:0', 'C:0', 'D:40', 'E:10', 'F:0', 'G:15', 'X'])
    expect(after.map((t) => t.credits.toFixed())).toEqual(WALLET.map((t) => t.credits.toFixed()))
    expectDec(balanceOf(after, JAN15).credit_balance, '75')
    expectDec((WALLET[0] as CreditTx).credits_available, '30') // the input is not mutated
  })

  it('adds up several consumptions of one credit', () => {
    const after = applyConsumption(WALLET, [
      { credit_id: 'B', credits: new D(5) },
      { credit_id: 'B', credits: new D(7) },
    ])
    expectDec((after[1] as CreditTx).credits_available, '8')
  })

  it('two debits planned from the same read: the second fails, a re-plan is refused or partial (no negative balance, no lost debit)', () => {
    const first = planDebit(WALLET, new D(100), JAN15)
    const second = planDebit(WALLET, new D(100), JAN15)
    const after = applyConsumption(WALLET, first.consumed)
    expect(() => applyConsumption(after, second.consumed)).toThrow(/insufficient credits/)
    expect(() => planDebit(after, new D(100), JAN15)).toThrow(/insufficient credits/)
    const retry = planDebit(after, new D(100), JAN15, { partial: true })
    expectDec(retry.debited, '50')
    expectDec(retry.shortfall, '50')
    expectDec(balanceOf(applyConsumption(after, retry.consumed), JAN15).credit_balance, '0')
  })

  it('rejects a consumption of an unknown or debit transaction', () => {
    expect(() => applyConsumption(WALLET, [{ credit_id: 'nope', credits: new D(1) }])).toThrow(/no credit transaction nope/)
    expect(() => applyConsumption(WALLET, [{ credit_id: 'X', credits: new D(1) }])).toThrow(/no credit transaction X/)
  })
})

describe('currency', () => {
  // [credits, conversion_rate, currency, exact, presented]
  it.each([
    ['150', '0.01', 'USD', '1.5', '1.5'],
    ['33.335', '1', 'USD', '33.335', '33.34'],
    ['10', '0.333', 'USD', '3.33', '3.33'],
    ['1', '0.005', 'EUR', '0.005', '0.01'],
    ['1234.5', '1', 'JPY', '1234.5', '1235'],
    ['1.2345', '1', 'KWD', '1.2345', '1.235'],
    ['0', '2', 'USD', '0', '0'],
  ])('%s credits at %s = %s %s', (credits, rate, currency, exact, presented) => {
    expectDec(creditsToCurrency(new D(credits), new D(rate)), exact)
    expectDec(balanceInCurrency(new D(credits), new D(rate), currency), presented)
  })

  it.each(['0', '-1'])('rejects conversion_rate %s', (rate) => {
    expect(() => creditsToCurrency(new D(1), new D(rate))).toThrow(/conversion_rate/)
  })
})
