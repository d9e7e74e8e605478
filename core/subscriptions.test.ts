import { describe, expect, it } from 'vitest'
import { AppError } from './errors.ts'
import type { BillingPeriod } from './periods.ts'
import {
  advance,
  billingAnchor,
  checkAnchor,
  checkPhases,
  checkThreshold,
  effectiveAt,
  initialStatus,
  matchPrices,
  periodAt,
  resolveTrial,
  type PlanPrice,
  type Schedule,
  type SubscriptionState,
  type Timeline,
} from './subscriptions.ts'

const d = (s: string) => new Date(s)

/** The fields a rejection names; [] when accepted. */
function fieldsOf(run: () => unknown): string[] {
  try {
    run()
    return []
  } catch (err) {
    expect(err).toBeInstanceOf(AppError)
    expect((err as AppError).code).toBe('validation_error')
    return Object.keys((err as AppError).details)
  }
}

const price = (over: Partial<PlanPrice>): PlanPrice => ({
  id: 'price_x',
  type: 'FIXED',
  currency: 'USD',
  billing_cadence: 'RECURRING',
  billing_period: 'MONTHLY',
  billing_period_count: 1,
  trial_period_days: 0,
  ...over,
})

function timeline(start: string, period: BillingPeriod, over: Partial<Timeline> = {}): Timeline {
  const schedule: Schedule = { billing_cycle: 'anniversary', billing_period: period, billing_period_count: 1, timezone: 'UTC', ...over }
  const t = { start_date: d(start), end_date: null, trial_start: null, trial_end: null, ...schedule, ...over }
  return { ...t, billing_anchor: over.billing_anchor ?? billingAnchor(schedule, t.trial_end ?? t.start_date) }
}

const iso = (p: { start: Date; end: Date }) => [p.start.toISOString(), p.end.toISOString()]

describe('matchPrices', () => {
  it('takes prices in the currency and period, and one-time charges (rule 9)', () => {
    const prices = [
      price({ id: 'monthly' }),
      price({ id: 'annual', billing_period: 'ANNUAL' }),
      price({ id: 'eur', currency: 'EUR' }),
      price({ id: 'every-2-months', billing_period_count: 2 }),
      price({ id: 'setup', billing_cadence: 'ONETIME', billing_period: 'ONETIME' }),
      price({ id: 'eur-setup', currency: 'EUR', billing_cadence: 'ONETIME', billing_period: 'ONETIME' }),
    ]
    expect(matchPrices(prices, 'usd', 'MONTHLY', 1).map((p) => p.id)).toEqual(['monthly', 'setup'])
    expect(matchPrices(prices, 'USD', 'MONTHLY', 2).map((p) => p.id)).toEqual(['every-2-months', 'setup'])
  })
})

describe('resolveTrial (rules 1 and 2)', () => {
  const start = d('2024-01-31T09:00:00Z')
  const fixed14 = price({ id: 'a', trial_period_days: 14 })

  it('refuses trial_period_days with explicit trial dates, naming both fields', () => {
    expect(fieldsOf(() => resolveTrial({ start, trial_period_days: 7, trial_end: d('2024-02-10T00:00:00Z') }, []))).toEqual(['trial_period_days', 'trial_end'])
    expect(fieldsOf(() => resolveTrial({ start, trial_period_days: 0, trial_start: start, trial_end: d('2024-02-10T00:00:00Z') }, []))).toEqual([
      'trial_period_days',
      'trial_start',
    ])
  })

  it('takes the trial from the recurring fixed prices when they agree', () => {
    const trial = resolveTrial({ start }, [fixed14, price({ id: 'b', trial_period_days: 14 }), price({ id: 'u', type: 'USAGE' })])
    expect(trial && iso(trial)).toEqual(['2024-01-31T09:00:00.000Z', '2024-02-14T09:00:00.000Z'])
  })

  it('ignores one-time and usage prices when reading the plan trial', () => {
    const setup = price({ id: 's', billing_cadence: 'ONETIME', billing_period: 'ONETIME', trial_period_days: 0 })
    expect(resolveTrial({ start }, [fixed14, setup, price({ id: 'u', type: 'USAGE' })])?.end).toEqual(d('2024-02-14T09:00:00Z'))
  })

  it('refuses prices that disagree, naming them', () => {
    try {
      resolveTrial({ start }, [fixed14, price({ id: 'b', trial_period_days: 7 })])
      expect.unreachable()
    } catch (err) {
      expect((err as AppError).details).toEqual({ trial_period_days: expect.any(String), price_ids: ['a', 'b'] })
      expect((err as AppError).message).toContain('a has 14')
      expect((err as AppError).message).toContain('b has 7')
    }
  })

  it('lets trial_period_days override disagreeing prices, and 0 means no trial', () => {
    const prices = [fixed14, price({ id: 'b', trial_period_days: 7 })]
    expect(resolveTrial({ start, trial_period_days: 3 }, prices)?.end).toEqual(d('2024-02-03T09:00:00Z'))
    expect(resolveTrial({ start, trial_period_days: 0 }, prices)).toBeNull()
    expect(resolveTrial({ start }, [price({})])).toBeNull()
  })

  it('takes explicit dates: the trial may have begun before the start but must end after it', () => {
    expect(resolveTrial({ start, trial_end: d('2024-02-05T00:00:00Z') }, [fixed14])).toEqual({ start, end: d('2024-02-05T00:00:00Z') })
    expect(fieldsOf(() => resolveTrial({ start, trial_start: start }, []))).toEqual(['trial_end'])
    expect(fieldsOf(() => resolveTrial({ start, trial_start: d('2024-02-01T00:00:00Z'), trial_end: d('2024-02-05T00:00:00Z') }, []))).toEqual(['trial_start'])
    expect(fieldsOf(() => resolveTrial({ start, trial_end: start }, []))).toEqual(['trial_end'])
  })
})

describe('checkAnchor (rule 3)', () => {
  it('accepts an anchor only with anniversary billing', () => {
    expect(fieldsOf(() => checkAnchor('anniversary', d('2024-01-05T00:00:00Z')))).toEqual([])
    expect(fieldsOf(() => checkAnchor('calendar', undefined))).toEqual([])
    expect(fieldsOf(() => checkAnchor('calendar', d('2024-01-05T00:00:00Z')))).toEqual(['billing_anchor'])
  })
})

describe('checkThreshold (rule 5)', () => {
  const usage = [price({ id: 'u', type: 'USAGE' }), price({ id: 'setup', billing_cadence: 'ONETIME', billing_period: 'ONETIME' })]
  it.each<[string, string | undefined, Parameters<typeof checkThreshold>[1], PlanPrice[], string[]]>([
    ['no threshold', undefined, 'inherited', [], []],
    ['zero on a usage plan', '0', 'standalone', usage, []],
    ['a positive threshold', '1500.50', 'standalone', usage, []],
    ['a negative threshold', '-0.01', 'standalone', usage, ['auto_invoice_threshold']],
    ['not a decimal', '1e3', 'standalone', usage, ['auto_invoice_threshold']],
    ['an inherited subscription', '10', 'inherited', usage, ['auto_invoice_threshold']],
    ['a delegated-invoicing subscription', '10', 'delegated_invoicing', usage, ['auto_invoice_threshold']],
    ['a parent subscription', '10', 'parent', usage, ['auto_invoice_threshold']],
    ['a plan with a recurring fixed price', '10', 'standalone', [...usage, price({ id: 'seat' })], ['auto_invoice_threshold']],
    ['a plan with only one-time prices', '10', 'standalone', [usage[1]], ['auto_invoice_threshold']],
  ])('%s', (_name, value, type, prices, fields) => {
    expect(fieldsOf(() => checkThreshold(value, type, prices))).toEqual(fields)
  })
})

describe('periodAt: every billing period, anchor days 28 to 31', () => {
  // [start (the anniversary anchor), period, an instant later on, the period holding it]
  const cases: [string, BillingPeriod, string, string, string][] = [
    ['2024-01-28T09:00:00Z', 'MONTHLY', '2024-03-05T00:00:00Z', '2024-02-28T09:00:00Z', '2024-03-28T09:00:00Z'],
    ['2024-01-29T09:00:00Z', 'MONTHLY', '2024-03-05T00:00:00Z', '2024-02-29T09:00:00Z', '2024-03-29T09:00:00Z'],
    ['2024-01-30T09:00:00Z', 'MONTHLY', '2024-03-05T00:00:00Z', '2024-02-29T09:00:00Z', '2024-03-30T09:00:00Z'],
    ['2024-01-31T09:00:00Z', 'MONTHLY', '2024-03-05T00:00:00Z', '2024-02-29T09:00:00Z', '2024-03-31T09:00:00Z'],
    ['2024-01-31T09:00:00Z', 'MONTHLY', '2024-04-30T10:00:00Z', '2024-04-30T09:00:00Z', '2024-05-31T09:00:00Z'],
    ['2023-01-31T09:00:00Z', 'MONTHLY', '2023-03-01T00:00:00Z', '2023-02-28T09:00:00Z', '2023-03-31T09:00:00Z'],
    ['2024-01-28T09:00:00Z', 'QUARTERLY', '2024-05-15T00:00:00Z', '2024-04-28T09:00:00Z', '2024-07-28T09:00:00Z'],
    ['2024-01-29T09:00:00Z', 'QUARTERLY', '2024-05-15T00:00:00Z', '2024-04-29T09:00:00Z', '2024-07-29T09:00:00Z'],
    ['2024-01-30T09:00:00Z', 'QUARTERLY', '2024-05-15T00:00:00Z', '2024-04-30T09:00:00Z', '2024-07-30T09:00:00Z'],
    ['2024-01-31T09:00:00Z', 'QUARTERLY', '2024-05-15T00:00:00Z', '2024-04-30T09:00:00Z', '2024-07-31T09:00:00Z'],
    ['2023-08-28T09:00:00Z', 'HALF_YEARLY', '2024-05-01T00:00:00Z', '2024-02-28T09:00:00Z', '2024-08-28T09:00:00Z'],
    ['2023-08-29T09:00:00Z', 'HALF_YEARLY', '2024-05-01T00:00:00Z', '2024-02-29T09:00:00Z', '2024-08-29T09:00:00Z'],
    ['2023-08-30T09:00:00Z', 'HALF_YEARLY', '2024-05-01T00:00:00Z', '2024-02-29T09:00:00Z', '2024-08-30T09:00:00Z'],
    ['2023-08-31T09:00:00Z', 'HALF_YEARLY', '2024-05-01T00:00:00Z', '2024-02-29T09:00:00Z', '2024-08-31T09:00:00Z'],
    ['2024-02-29T09:00:00Z', 'ANNUAL', '2025-06-01T00:00:00Z', '2025-02-28T09:00:00Z', '2026-02-28T09:00:00Z'],
    ['2024-02-29T09:00:00Z', 'ANNUAL', '2028-03-01T00:00:00Z', '2028-02-29T09:00:00Z', '2029-02-28T09:00:00Z'],
    ['2023-12-31T09:00:00Z', 'ANNUAL', '2024-12-31T08:00:00Z', '2023-12-31T09:00:00Z', '2024-12-31T09:00:00Z'],
    ['2024-01-31T09:00:00Z', 'WEEKLY', '2024-02-15T00:00:00Z', '2024-02-14T09:00:00Z', '2024-02-21T09:00:00Z'],
    ['2024-01-31T09:00:00Z', 'DAILY', '2024-02-01T08:00:00Z', '2024-01-31T09:00:00Z', '2024-02-01T09:00:00Z'],
    ['2024-02-28T09:00:00Z', 'DAILY', '2024-03-01T10:00:00Z', '2024-03-01T09:00:00Z', '2024-03-02T09:00:00Z'],
  ]
  it.each(cases)('anniversary from %s, %s: at %s the period is %s to %s', (start, period, at, from, to) => {
    expect(iso(periodAt(timeline(start, period), d(at)))).toEqual([d(from).toISOString(), d(to).toISOString()])
  })

  it('starts with the first period before the start date', () => {
    expect(iso(periodAt(timeline('2024-01-31T09:00:00Z', 'MONTHLY'), d('2023-12-01T00:00:00Z')))).toEqual([
      '2024-01-31T09:00:00.000Z',
      '2024-02-29T09:00:00.000Z',
    ])
  })

  it('billing counts over several periods', () => {
    const t = timeline('2024-01-31T09:00:00Z', 'MONTHLY', { billing_period_count: 2 })
    expect(iso(periodAt(t, d('2024-04-01T00:00:00Z')))).toEqual(['2024-03-31T09:00:00.000Z', '2024-05-31T09:00:00.000Z'])
  })

  it('calendar billing: a short first period to the month start, then whole months', () => {
    const t = timeline('2024-01-31T09:00:00Z', 'MONTHLY', { billing_cycle: 'calendar' })
    expect(t.billing_anchor).toEqual(d('2024-01-01T00:00:00Z'))
    expect(iso(periodAt(t, t.start_date))).toEqual(['2024-01-31T09:00:00.000Z', '2024-02-01T00:00:00.000Z'])
    expect(iso(periodAt(t, d('2024-03-05T00:00:00Z')))).toEqual(['2024-03-01T00:00:00.000Z', '2024-04-01T00:00:00.000Z'])
  })

  it.each<[BillingPeriod, string]>([
    ['DAILY', '2024-06-01T00:00:00.000Z'],
    ['WEEKLY', '2024-06-03T00:00:00.000Z'],
    ['QUARTERLY', '2024-07-01T00:00:00.000Z'],
    ['HALF_YEARLY', '2024-07-01T00:00:00.000Z'],
    ['ANNUAL', '2025-01-01T00:00:00.000Z'],
  ])('calendar billing %s: the first period ends at the next calendar boundary %s', (period, end) => {
    const t = timeline('2024-05-31T12:00:00Z', period, { billing_cycle: 'calendar' })
    expect(periodAt(t, t.start_date).end.toISOString()).toBe(end)
  })

  it('calendar billing in the customer time zone', () => {
    const t = timeline('2024-01-31T09:00:00Z', 'MONTHLY', { billing_cycle: 'calendar', timezone: 'America/New_York' })
    expect(iso(periodAt(t, t.start_date))).toEqual(['2024-01-31T09:00:00.000Z', '2024-02-01T05:00:00.000Z'])
    // Midnight in New York is 04:00Z once daylight saving starts.
    expect(periodAt(t, d('2024-04-15T00:00:00Z')).start.toISOString()).toBe('2024-04-01T04:00:00.000Z')
  })

  it('an explicit anchor after the start gives a short first period', () => {
    const t = timeline('2024-01-10T00:00:00Z', 'MONTHLY', { billing_anchor: d('2024-01-25T00:00:00Z') })
    expect(iso(periodAt(t, t.start_date))).toEqual(['2024-01-10T00:00:00.000Z', '2024-01-25T00:00:00.000Z'])
    expect(iso(periodAt(t, d('2024-01-26T00:00:00Z')))).toEqual(['2024-01-25T00:00:00.000Z', '2024-02-25T00:00:00.000Z'])
  })

  it('a trial is the first period and billing anchors at its end', () => {
    const t = timeline('2024-01-31T09:00:00Z', 'MONTHLY', { trial_start: d('2024-01-31T09:00:00Z'), trial_end: d('2024-02-14T09:00:00Z') })
    expect(t.billing_anchor).toEqual(d('2024-02-14T09:00:00Z'))
    expect(iso(periodAt(t, d('2024-02-01T00:00:00Z')))).toEqual(['2024-01-31T09:00:00.000Z', '2024-02-14T09:00:00.000Z'])
    expect(iso(periodAt(t, d('2024-02-20T00:00:00Z')))).toEqual(['2024-02-14T09:00:00.000Z', '2024-03-14T09:00:00.000Z'])
  })

  it('the last period ends at end_date', () => {
    const t = timeline('2024-01-31T09:00:00Z', 'MONTHLY', { end_date: d('2024-03-10T00:00:00Z') })
    expect(periodAt(t, d('2024-03-01T00:00:00Z')).end).toEqual(d('2024-03-10T00:00:00Z'))
  })
})

describe('initialStatus', () => {
  const t = timeline('2024-02-01T00:00:00Z', 'MONTHLY', { trial_start: d('2024-02-01T00:00:00Z'), trial_end: d('2024-02-15T00:00:00Z') })
  it.each<[string, string, boolean, string]>([
    ['a future start is not yet active', '2024-01-15T00:00:00Z', false, 'not_started'],
    ['during the trial', '2024-02-05T00:00:00Z', false, 'trialing'],
    ['after the trial', '2024-02-20T00:00:00Z', false, 'active'],
    ['waiting for a first payment', '2024-02-20T00:00:00Z', true, 'incomplete'],
  ])('%s', (_name, now, awaits, status) => {
    expect(initialStatus(t, d(now), awaits)).toBe(status)
  })
})

describe('advance', () => {
  const base = (over: Partial<SubscriptionState> = {}): SubscriptionState => {
    const t = timeline('2024-01-31T09:00:00Z', 'MONTHLY')
    return { ...t, subscription_status: 'active', current_period_start: t.start_date, current_period_end: d('2024-02-29T09:00:00Z'), cancel_at: null, cancelled_at: null, ...over }
  }

  it('does nothing inside the period', () => {
    expect(advance(base(), d('2024-02-10T00:00:00Z'))).toBeUndefined()
  })

  it('rolls a finished period to the next and says a renewal is due', () => {
    const a = advance(base(), d('2024-03-01T00:00:00Z'))!
    expect(a.events).toEqual(['subscription.renewal.due'])
    expect([a.changes.current_period_start, a.changes.current_period_end]).toEqual([d('2024-02-29T09:00:00Z'), d('2024-03-31T09:00:00Z')])
  })

  it('cancels at cancel_at (rule 4: it stays active until then and ends by itself)', () => {
    const s = base({ cancel_at: d('2024-02-20T00:00:00Z') })
    expect(advance(s, d('2024-02-19T23:59:59Z'))).toBeUndefined()
    expect(advance(s, d('2024-02-20T00:00:00Z'))).toEqual({
      changes: { subscription_status: 'cancelled', cancelled_at: d('2024-02-20T00:00:00Z'), end_date: d('2024-02-20T00:00:00Z') },
      events: ['subscription.cancelled'],
    })
  })

  it('ends at end_date and leaves a cancelled subscription alone', () => {
    expect(advance(base({ end_date: d('2024-02-10T00:00:00Z') }), d('2024-03-01T00:00:00Z'))?.changes.subscription_status).toBe('cancelled')
    expect(advance(base({ subscription_status: 'cancelled' }), d('2025-01-01T00:00:00Z'))).toBeUndefined()
  })

  it('leaves a draft alone until it is activated', () => {
    expect(advance(base({ subscription_status: 'draft', cancel_at: d('2024-02-20T00:00:00Z') }), d('2025-01-01T00:00:00Z'))).toBeUndefined()
  })

  it('activates a subscription whose start is reached, and one whose trial ended', () => {
    const future = base({ subscription_status: 'not_started', current_period_end: d('2024-02-29T09:00:00Z') })
    expect(advance(future, d('2024-02-01T00:00:00Z'))).toEqual({ changes: { subscription_status: 'active' }, events: ['subscription.activated'] })
    const t = timeline('2024-01-31T09:00:00Z', 'MONTHLY', { trial_start: d('2024-01-31T09:00:00Z'), trial_end: d('2024-02-14T09:00:00Z') })
    const trialing: SubscriptionState = { ...t, subscription_status: 'trialing', current_period_start: t.start_date, current_period_end: d('2024-02-14T09:00:00Z'), cancel_at: null, cancelled_at: null }
    const a = advance(trialing, d('2024-02-14T09:00:00Z'))!
    expect(a.changes).toMatchObject({ subscription_status: 'active', current_period_start: d('2024-02-14T09:00:00Z'), current_period_end: d('2024-03-14T09:00:00Z') })
    expect(a.events).toEqual(['subscription.activated', 'subscription.renewal.due'])
  })
})

describe('checkPhases', () => {
  const start = d('2024-01-01T00:00:00Z')
  const p = (s: string, e: string | null) => ({ start_date: d(s), end_date: e ? d(e) : null })
  it.each<[string, ReturnType<typeof p>[], Date | null, string[]]>([
    ['ordered, touching phases', [p('2024-01-01T00:00:00Z', '2024-04-01T00:00:00Z'), p('2024-04-01T00:00:00Z', null)], null, []],
    ['a phase before the start', [p('2023-12-01T00:00:00Z', null)], null, ['phases[0].start_date']],
    ['an end before its start', [p('2024-03-01T00:00:00Z', '2024-02-01T00:00:00Z')], null, ['phases[0].end_date']],
    ['overlapping phases', [p('2024-01-01T00:00:00Z', '2024-05-01T00:00:00Z'), p('2024-04-01T00:00:00Z', null)], null, ['phases[0].end_date']],
    ['an open phase before another', [p('2024-01-01T00:00:00Z', null), p('2024-04-01T00:00:00Z', null)], null, ['phases[0].end_date']],
    ['a phase past the subscription end', [p('2024-01-01T00:00:00Z', '2024-09-01T00:00:00Z')], d('2024-06-01T00:00:00Z'), ['phases[0].end_date']],
  ])('%s', (_name, phases, end, fields) => {
    expect(fieldsOf(() => checkPhases(phases, start, end))).toEqual(fields)
  })
})

describe('effectiveAt', () => {
  const period = { start: d('2024-02-01T00:00:00Z'), end: d('2024-03-01T00:00:00Z') }
  const now = d('2024-02-10T00:00:00Z')
  it('defaults to now and accepts a later instant in the period', () => {
    expect(effectiveAt(undefined, now, period, 'effective_date')).toEqual(now)
    expect(effectiveAt(d('2024-02-20T00:00:00Z'), now, period, 'effective_date')).toEqual(d('2024-02-20T00:00:00Z'))
  })
  it.each(['2024-02-09T00:00:00Z', '2024-03-01T00:00:00Z'])('refuses %s', (at) => {
    expect(fieldsOf(() => effectiveAt(d(at), now, period, 'effective_date'))).toEqual(['effective_date'])
  })
})
