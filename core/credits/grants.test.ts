import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import type { BillingPeriod } from '../periods.ts'
import { dueApplications, type CreditGrant, type DueApplication, type GrantSubscription } from './grants.ts'

// Every instant below is worked out by hand (UTC unless a time zone is named).
const d = (s: string): Date => new Date(s)
const day = (s: string): string => `${s}T00:00:00.000Z`
const SUB: GrantSubscription = { id: 'sub_1', plan_id: 'plan_1', start_date: d(day('2025-01-15')) }
const MONTHLY: CreditGrant = {
  id: 'cg_1',
  scope: 'PLAN',
  plan_id: 'plan_1',
  cadence: 'RECURRING',
  credits: new D(100),
  period: 'MONTHLY',
  period_count: 1,
  expiration_type: 'BILLING_CYCLE',
  priority: 1,
}
const due = (grant: Partial<CreditGrant>, sub: Partial<GrantSubscription>, now: string, since?: string): DueApplication[] =>
  dueApplications({ ...MONTHLY, ...grant }, { ...SUB, ...sub }, d(now), since ? { since: d(since) } : {})
const starts = (apps: DueApplication[]): string[] => apps.map((a) => a.period_start.toISOString())
const iso = (x: Date | null): string | null => x && x.toISOString()
const maybe = (s: string | null): Date | null => (s === null ? null : d(s))

describe('rule 14: a subscription started in the past gets every elapsed period, in order, plus the current one', () => {
  it('monthly from 2025-01-15, evaluated on 2025-04-20: four applications', () => {
    const apps = due({}, {}, '2025-04-20T09:00:00Z')
    expect(apps.map((a) => [iso(a.period_start), iso(a.period_end), iso(a.scheduled_for), a.application_reason, iso(a.expiry_date), a.idempotency_key])).toEqual([
      [day('2025-01-15'), day('2025-02-15'), day('2025-01-15'), 'first_time_recurring_credit_grant', day('2025-02-15'), 'cg_1:sub_1:2025-01-15T00:00:00.000Z'],
      [day('2025-02-15'), day('2025-03-15'), day('2025-02-15'), 'recurring_credit_grant', day('2025-03-15'), 'cg_1:sub_1:2025-02-15T00:00:00.000Z'],
      [day('2025-03-15'), day('2025-04-15'), day('2025-03-15'), 'recurring_credit_grant', day('2025-04-15'), 'cg_1:sub_1:2025-03-15T00:00:00.000Z'],
      [day('2025-04-15'), day('2025-05-15'), day('2025-04-15'), 'recurring_credit_grant', day('2025-05-15'), 'cg_1:sub_1:2025-04-15T00:00:00.000Z'],
    ])
    expect(apps.every((a) => a.credits.eq(100) && a.priority === 1 && a.credit_grant_id === 'cg_1' && a.subscription_id === 'sub_1')).toBe(true)
  })

  it('gives the same keys on a rerun (idempotent)', () => {
    const keys = (now: string) => due({}, {}, now).map((a) => a.idempotency_key)
    expect(keys('2025-04-20T00:00:00Z')).toEqual(keys('2025-04-16T00:00:00Z'))
    expect(keys('2025-05-20T00:00:00Z').slice(0, 4)).toEqual(keys('2025-04-20T00:00:00Z'))
  })

  // [now, period starts due]
  it.each([
    ['2025-01-14T23:59:59.999Z', []],
    ['2025-01-15T00:00:00.000Z', ['2025-01-15']], // a period starting exactly now is due now
    ['2025-02-14T23:59:59.999Z', ['2025-01-15']],
    ['2025-02-15T00:00:00.000Z', ['2025-01-15', '2025-02-15']],
  ])('now %s: %j', (now, expected) => {
    expect(starts(due({}, {}, now))).toEqual(expected.map(day))
  })
})

describe('periods of every length (subscription from 2025-01-15)', () => {
  // [period, period_count, now, period starts]
  it.each([
    ['DAILY', 1, '2025-01-17T12:00:00Z', ['2025-01-15', '2025-01-16', '2025-01-17']],
    ['WEEKLY', 1, '2025-02-01T00:00:00Z', ['2025-01-15', '2025-01-22', '2025-01-29']],
    ['WEEKLY', 2, '2025-02-01T00:00:00Z', ['2025-01-15', '2025-01-29']],
    ['MONTHLY', 2, '2025-04-20T00:00:00Z', ['2025-01-15', '2025-03-15']],
    ['QUARTERLY', 1, '2025-10-15T00:00:00Z', ['2025-01-15', '2025-04-15', '2025-07-15', '2025-10-15']],
    ['HALF_YEARLY', 1, '2026-01-14T00:00:00Z', ['2025-01-15', '2025-07-15']],
    ['ANNUAL', 1, '2027-01-15T00:00:00Z', ['2025-01-15', '2026-01-15', '2027-01-15']],
  ] as const)('%s × %i until %s', (period, period_count, now, expected) => {
    expect(starts(due({ period: period as BillingPeriod, period_count }, {}, now))).toEqual(expected.map(day))
  })

  it('keeps a month-end anchor at month end (periods.ts clamps from the anchor)', () => {
    expect(starts(due({}, { start_date: d(day('2025-01-31')) }, '2025-05-01T00:00:00Z'))).toEqual(['2025-01-31', '2025-02-28', '2025-03-31', '2025-04-30'].map(day))
  })

  it("follows the customer's local midnight across a DST change", () => {
    const sub = { start_date: d('2025-03-08T05:00:00Z'), customer_timezone: 'America/New_York' }
    expect(starts(due({ period: 'DAILY' }, sub, '2025-03-10T04:00:00Z'))).toEqual(['2025-03-08T05:00:00.000Z', '2025-03-09T05:00:00.000Z', '2025-03-10T04:00:00.000Z'])
  })
})

describe('anchor and start', () => {
  it('a SUBSCRIPTION grant follows its credit_grant_anchor; the first period is scheduled at the subscription start', () => {
    const apps = due({ scope: 'SUBSCRIPTION', subscription_id: 'sub_1', plan_id: null, credit_grant_anchor: d(day('2025-01-01')) }, {}, '2025-03-10T00:00:00Z')
    expect(starts(apps)).toEqual(['2025-01-01', '2025-02-01', '2025-03-01'].map(day))
    expect(apps.map((a) => iso(a.scheduled_for))).toEqual(['2025-01-15', '2025-02-01', '2025-03-01'].map(day))
    expect(apps.map((a) => a.application_reason)).toEqual(['first_time_recurring_credit_grant', 'recurring_credit_grant', 'recurring_credit_grant'])
    expect(iso(apps[0].expiry_date)).toBe(day('2025-02-01'))
  })

  it("a PLAN grant ignores credit_grant_anchor: each subscription's periods start at its own start", () => {
    expect(starts(due({ credit_grant_anchor: d(day('2025-01-01')) }, {}, '2025-03-10T00:00:00Z'))).toEqual(['2025-01-15', '2025-02-15'].map(day))
  })

  it('a grant starting after the subscription: first application when the grant starts, inside the period holding it', () => {
    const apps = due({ start_date: d(day('2025-02-10')) }, {}, '2025-03-20T00:00:00Z')
    expect(starts(apps)).toEqual(['2025-01-15', '2025-02-15', '2025-03-15'].map(day))
    expect(apps.map((a) => iso(a.scheduled_for))).toEqual(['2025-02-10', '2025-02-15', '2025-03-15'].map(day))
    expect(apps[0].application_reason).toBe('first_time_recurring_credit_grant')
  })
})

describe('stops', () => {
  // [grant end_date, subscription end_date, period starts due on 2025-04-20]
  it.each([
    ['grant ends at a period start: that period gets nothing', day('2025-03-15'), null, ['2025-01-15', '2025-02-15']],
    ['grant ends 1 ms later: that period is due', '2025-03-15T00:00:00.001Z', null, ['2025-01-15', '2025-02-15', '2025-03-15']],
    ['grant ended before the subscription started', day('2025-01-10'), null, []],
    ['subscription ended inside a period', null, day('2025-03-20'), ['2025-01-15', '2025-02-15', '2025-03-15']],
    ['subscription ended at its start', null, day('2025-01-15'), []],
    ['the earlier end wins', day('2025-04-01'), day('2025-02-20'), ['2025-01-15', '2025-02-15']],
  ])('%s', (_, grantEnd, subEnd, expected) => {
    expect(starts(due({ end_date: maybe(grantEnd) }, { end_date: maybe(subEnd) }, '2025-04-20T00:00:00Z'))).toEqual(expected.map(day))
  })
})

describe('expiry of the granted credits', () => {
  // [expiration_type, duration, unit, expiry of the first application (scheduled 2025-01-31, period ends 2025-02-28)]
  it.each([
    ['NEVER', null, null, null],
    ['BILLING_CYCLE', null, null, '2025-02-28'],
    ['DURATION', 1, 'DAY', '2025-02-01'],
    ['DURATION', 2, 'WEEK', '2025-02-14'],
    ['DURATION', 1, 'MONTH', '2025-02-28'],
    ['DURATION', 13, 'MONTH', '2026-02-28'],
    ['DURATION', 1, 'YEAR', '2026-01-31'],
  ] as const)('%s %s %s: %s', (expiration_type, expiration_duration, expiration_duration_unit, expected) => {
    const [app] = due({ expiration_type, expiration_duration, expiration_duration_unit }, { start_date: d(day('2025-01-31')) }, '2025-01-31T00:00:00Z')
    expect(iso(app.expiry_date)).toBe(expected && day(expected))
  })

  it('DURATION counts from the application, not the period start', () => {
    const [app] = due({ start_date: d(day('2025-02-10')), expiration_type: 'DURATION', expiration_duration: 7, expiration_duration_unit: 'DAY' }, {}, '2025-02-10T00:00:00Z')
    expect(iso(app.expiry_date)).toBe(day('2025-02-17'))
  })

  it("DURATION in days keeps the customer's local time across DST", () => {
    const sub = { start_date: d('2025-03-08T05:00:00Z'), customer_timezone: 'America/New_York' }
    const [app] = due({ expiration_type: 'DURATION', expiration_duration: 2, expiration_duration_unit: 'DAY' }, sub, '2025-03-08T05:00:00Z')
    expect(iso(app.expiry_date)).toBe('2025-03-10T04:00:00.000Z')
  })
})

describe('ONETIME', () => {
  const ONETIME: Partial<CreditGrant> = { cadence: 'ONETIME', period: null, period_count: null, expiration_type: 'NEVER' }
  it('one application when the subscription (or the grant, if later) starts', () => {
    const [app, ...rest] = due(ONETIME, {}, '2025-04-20T00:00:00Z')
    expect(rest).toEqual([])
    expect([iso(app.period_start), iso(app.period_end), iso(app.scheduled_for), app.application_reason, app.idempotency_key]).toEqual([
      day('2025-01-15'),
      null,
      day('2025-01-15'),
      'onetime_credit_grant',
      'cg_1:sub_1:2025-01-15T00:00:00.000Z',
    ])
    expect(starts(due({ ...ONETIME, start_date: d(day('2025-02-01')) }, {}, '2025-04-20T00:00:00Z'))).toEqual([day('2025-02-01')])
  })

  // [now, grant end, since, count]
  it.each([
    ['2025-01-14T23:59:59.999Z', null, undefined, 0],
    ['2025-01-15T00:00:00.000Z', null, undefined, 1],
    ['2025-04-20T00:00:00.000Z', day('2025-01-10'), undefined, 0],
    ['2025-04-20T00:00:00.000Z', null, day('2025-01-15'), 1],
    ['2025-04-20T00:00:00.000Z', null, day('2025-02-01'), 0],
  ])('now %s, end %s, since %s: %i', (now, end, since, count) => {
    expect(due({ ...ONETIME, end_date: maybe(end) }, {}, now, since)).toHaveLength(count)
  })

  it('with DURATION expiry', () => {
    const [app] = due({ ...ONETIME, expiration_type: 'DURATION', expiration_duration: 30, expiration_duration_unit: 'DAY' }, {}, '2025-04-20T00:00:00Z')
    expect(iso(app.expiry_date)).toBe(day('2025-02-14'))
  })
})

describe('since: only applications scheduled at or after it', () => {
  // [now, since, period starts]
  it.each([
    ['2025-04-20T00:00:00Z', day('2025-03-15'), ['2025-03-15', '2025-04-15']],
    ['2025-04-20T00:00:00Z', day('2025-03-01'), ['2025-03-15', '2025-04-15']],
    ['2025-04-20T00:00:00Z', day('2025-01-01'), ['2025-01-15', '2025-02-15', '2025-03-15', '2025-04-15']],
    ['2025-07-20T00:00:00Z', '2025-04-20T00:00:00Z', ['2025-05-15', '2025-06-15', '2025-07-15']], // upcoming after 04-20
  ])('now %s since %s: %j', (now, since, expected) => {
    const apps = due({}, {}, now, since)
    expect(starts(apps)).toEqual(expected.map(day))
    expect(apps.some((a) => a.application_reason === 'first_time_recurring_credit_grant')).toBe(expected[0] === '2025-01-15')
  })
})

describe('invalid grants', () => {
  it.each([
    ['SUBSCRIPTION grant of another subscription', { scope: 'SUBSCRIPTION', subscription_id: 'sub_2' }, /does not belong/],
    ['PLAN grant of another plan', { plan_id: 'plan_2' }, /does not belong/],
    ['zero credits', { credits: new D(0) }, /credits must be greater than 0/],
    ['RECURRING without period', { period: null }, /needs a period/],
    ['period_count 0', { period_count: 0 }, /count must be an integer/],
    ['BILLING_CYCLE on ONETIME', { cadence: 'ONETIME' }, /BILLING_CYCLE expiry needs a RECURRING/],
    ['DURATION without duration', { expiration_type: 'DURATION', expiration_duration_unit: 'DAY' }, /expiration_duration must be/],
    ['DURATION 0', { expiration_type: 'DURATION', expiration_duration: 0, expiration_duration_unit: 'DAY' }, /expiration_duration must be/],
    ['DURATION 1.5', { expiration_type: 'DURATION', expiration_duration: 1.5, expiration_duration_unit: 'DAY' }, /expiration_duration must be/],
    ['DURATION in hours', { expiration_type: 'DURATION', expiration_duration: 1, expiration_duration_unit: 'HOUR' }, /expiration_duration_unit/],
  ] as [string, Partial<CreditGrant>, RegExp][])('%s', (_, grant, message) => {
    expect(() => due(grant, {}, '2025-04-20T00:00:00Z')).toThrow(message)
  })
})
