import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { checkConfig, type PricingConfig } from './config.ts'
import { parsePricingDescription, type ParseOptions } from './parse.ts'

/** A configuration in one line per record, so a table row states what it expects at a glance. */
function summary(c: PricingConfig) {
  return {
    currency: c.currency,
    meters: c.meters.map((m) => `${m.event_name} ${m.aggregation.type}${m.aggregation.field ? `(${m.aggregation.field})` : ''}`),
    features: c.features.map((f) => `${f.lookup_key} ${f.type}${f.meter_ref ? ` @${f.meter_ref}` : ''}`),
    plans: Object.fromEntries(
      c.plans.map((p) => [
        p.lookup_key,
        [
          ...p.prices.map((x) =>
            [
              x.type,
              x.billing_model,
              x.billing_period + (x.billing_period_count ? `×${x.billing_period_count}` : ''),
              x.amount,
              x.tiers && `${x.tier_mode}${x.tiers.map((t) => `|${t.up_to ?? '∞'}:${t.unit_amount}`).join('')}`,
              x.transform_quantity && `per ${x.transform_quantity.divide_by} ${x.transform_quantity.round}`,
              x.meter_ref && `@${x.meter_ref}`,
              x.trial_period_days && `trial ${x.trial_period_days}`,
              x.min_quantity && `min ${x.min_quantity}`,
            ]
              .filter(Boolean)
              .join(' '),
          ),
          ...p.entitlements.map((e) =>
            e.static_value !== undefined
              ? `${e.feature_ref}=${e.static_value}`
              : e.usage_reset_period
                ? `${e.feature_ref} ${e.usage_limit ?? 'unlimited'}${e.usage_limit !== null ? (e.is_soft_limit ? ' soft' : ' hard') : ''} ${e.usage_reset_period}`
                : `${e.feature_ref} on`,
          ),
        ],
      ]),
    ),
  }
}

interface Row {
  text: string
  options?: ParseOptions
  plans: Record<string, string[]>
  meters?: string[]
  features?: string[]
  currency?: string
  /** Parts of warning messages, in order. */
  warnings?: string[]
}

// Amounts hand-checked: "$39/month billed annually" is 39 × 12 = 468 a year; "$2 per million, pro rata" is
// 2 / 1,000,000 = 0.000002 a token; tiers are the description's bounds, less an allowance that comes first.
const understood: Row[] = [
  {
    text: '$49/month includes 10k API calls, then $0.002 per call; 1M tokens free then $3 per million; SSO on Enterprise',
    meters: ['api_call COUNT', 'token_usage SUM(tokens)'],
    features: ['api_calls metered @api_call', 'tokens metered @token_usage', 'sso boolean'],
    plans: {
      standard: [
        'FIXED FLAT_FEE MONTHLY 49',
        'USAGE FLAT_FEE MONTHLY 0.002 @api_call',
        'USAGE PACKAGE MONTHLY 3 per 1000000 up @token_usage',
        'api_calls 10000 soft MONTHLY',
        'tokens 1000000 soft MONTHLY',
      ],
      enterprise: ['sso on'],
    },
    warnings: ['plan Enterprise has no price'],
  },
  { text: '$19 per month', plans: { standard: ['FIXED FLAT_FEE MONTHLY 19'] } },
  { text: '€29/mo', currency: 'EUR', plans: { standard: ['FIXED FLAT_FEE MONTHLY 29'] } },
  { text: '49 EUR per month', currency: 'EUR', plans: { standard: ['FIXED FLAT_FEE MONTHLY 49'] } },
  { text: '£99 a month', currency: 'GBP', plans: { standard: ['FIXED FLAT_FEE MONTHLY 99'] } },
  { text: 'CHF 20 per month', currency: 'CHF', plans: { standard: ['FIXED FLAT_FEE MONTHLY 20'] } },
  { text: '₹999 per month', currency: 'INR', plans: { standard: ['FIXED FLAT_FEE MONTHLY 999'] } },
  { text: '¥5000/month', currency: 'JPY', plans: { standard: ['FIXED FLAT_FEE MONTHLY 5000'] }, warnings: ['¥ is read as JPY'] },
  { text: '49,90 €/month', currency: 'EUR', plans: { standard: ['FIXED FLAT_FEE MONTHLY 49.9'] } },
  { text: '$1.5k/month', plans: { standard: ['FIXED FLAT_FEE MONTHLY 1500'] } },
  { text: '49 per month', options: { currency: 'eur' }, currency: 'EUR', plans: { standard: ['FIXED FLAT_FEE MONTHLY 49'] } },
  { text: '$490 annually', plans: { standard: ['FIXED FLAT_FEE ANNUAL 490'] } },
  { text: '$49/month or $490/year', plans: { standard: ['FIXED FLAT_FEE MONTHLY 49', 'FIXED FLAT_FEE ANNUAL 490'] } },
  { text: '$39/month billed annually', plans: { standard: ['FIXED FLAT_FEE ANNUAL 468'] } },
  { text: '$99/month, or $79/month when billed annually', plans: { standard: ['FIXED FLAT_FEE MONTHLY 99', 'FIXED FLAT_FEE ANNUAL 948'] } },
  { text: '$29 every 3 months', plans: { standard: ['FIXED FLAT_FEE QUARTERLY 29'] } },
  { text: '$12 every 2 weeks', plans: { standard: ['FIXED FLAT_FEE WEEKLY×2 12'] } },
  { text: '$10 per seat per month, minimum 3 seats', plans: { standard: ['FIXED FLAT_FEE MONTHLY 10 min 3'] } },
  { text: '$8/user/month with 5 users included', plans: { standard: ['FIXED TIERED MONTHLY SLAB|5:0|∞:8'] } },
  { text: '$25/month per workspace', plans: { standard: ['FIXED FLAT_FEE MONTHLY 25'] } },
  { text: '$0.01 per API call', meters: ['api_call COUNT'], plans: { standard: ['USAGE FLAT_FEE MONTHLY 0.01 @api_call', 'api_calls unlimited MONTHLY'] } },
  { text: '$5 per 1,000 emails', meters: ['email COUNT'], plans: { standard: ['USAGE PACKAGE MONTHLY 5 per 1000 up @email', 'emails unlimited MONTHLY'] } },
  { text: '$0.50 per thousand requests', plans: { standard: ['USAGE PACKAGE MONTHLY 0.5 per 1000 up @request', 'requests unlimited MONTHLY'] } },
  { text: '$2 per million tokens, pro rata', meters: ['token_usage SUM(tokens)'], plans: { standard: ['USAGE FLAT_FEE MONTHLY 0.000002 @token_usage', 'tokens unlimited MONTHLY'] } },
  { text: 'First 1,000 calls free, then $0.01 per call', plans: { standard: ['USAGE FLAT_FEE MONTHLY 0.01 @call', 'calls 1000 soft MONTHLY'] } },
  { text: '$0.002 per call after the first 10,000', plans: { standard: ['USAGE FLAT_FEE MONTHLY 0.002 @call', 'calls 10000 soft MONTHLY'] } },
  {
    text: 'first 10,000 requests at $0.001, next 90,000 at $0.0008, then $0.0005',
    plans: { standard: ['USAGE TIERED MONTHLY SLAB|10000:0.001|100000:0.0008|∞:0.0005 @request', 'requests unlimited MONTHLY'] },
  },
  {
    text: 'First 1,000 messages free, next 9,000 at $0.01, then $0.005',
    plans: { standard: ['USAGE TIERED MONTHLY SLAB|9000:0.01|∞:0.005 @message', 'messages 1000 soft MONTHLY'] },
  },
  {
    text: 'Volume pricing: up to 1,000 messages at $0.05 each, up to 10,000 at $0.04, above 10,000 $0.03',
    plans: { standard: ['USAGE TIERED MONTHLY VOLUME|1000:0.05|10000:0.04|∞:0.03 @message', 'messages unlimited MONTHLY'] },
  },
  {
    text: '1-1,000 SMS: $0.05; 1,001-10,000 SMS: $0.04; 10,001+ SMS: $0.03',
    meters: ['sms COUNT'],
    plans: { standard: ['USAGE TIERED MONTHLY SLAB|1000:0.05|10000:0.04|∞:0.03 @sms', 'sms unlimited MONTHLY'] },
  },
  {
    text: '10,000 events per month included, $0.20 per 1,000 events over that',
    plans: { standard: ['USAGE PACKAGE MONTHLY 0.2 per 1000 up @event', 'events 10000 soft MONTHLY'] },
  },
  {
    text: '100 GB of storage included, then $0.10 per GB',
    meters: ['storage_usage SUM(gb)'],
    plans: { standard: ['USAGE FLAT_FEE MONTHLY 0.1 @storage_usage', 'storage_gb 100 soft MONTHLY'] },
  },
  { text: 'Storage: $0.10/GB per month, 5 GB free', plans: { standard: ['USAGE FLAT_FEE MONTHLY 0.1 @storage_usage', 'storage_gb 5 soft MONTHLY'] } },
  {
    text: '$0.05 per monthly active user',
    meters: ['user_active COUNT_UNIQUE(user_id)'],
    plans: { standard: ['USAGE FLAT_FEE MONTHLY 0.05 @user_active', 'active_users unlimited MONTHLY'] },
  },
  { text: '$99/month with a 14-day free trial', plans: { standard: ['FIXED FLAT_FEE MONTHLY 99 trial 14'] } },
  { text: 'Pro: $49/month, 30 day trial', plans: { pro: ['FIXED FLAT_FEE MONTHLY 49 trial 30'] } },
  { text: '$500 one-time setup fee plus $99/month', plans: { standard: ['FIXED FLAT_FEE MONTHLY 99', 'FIXED FLAT_FEE ONETIME 500'] } },
  {
    text: 'Starter: $19/month. Pro: $49/month. Enterprise: custom pricing, SSO, audit logs',
    features: ['sso boolean', 'audit_logs boolean'],
    plans: { starter: ['FIXED FLAT_FEE MONTHLY 19'], pro: ['FIXED FLAT_FEE MONTHLY 49'], enterprise: ['sso on', 'audit_logs on'] },
    warnings: ['custom pricing is not a price', 'plan Enterprise has no price'],
  },
  {
    text: 'Starter $19/mo, Pro $49/mo with SSO',
    plans: { starter: ['FIXED FLAT_FEE MONTHLY 19'], pro: ['FIXED FLAT_FEE MONTHLY 49', 'sso on'] },
  },
  {
    text: 'Free: up to 1,000 API calls per month. Pro: $29/month includes 50k API calls, then $0.001 per call',
    plans: {
      free: ['FIXED FLAT_FEE MONTHLY 0', 'api_calls 1000 hard MONTHLY'],
      pro: ['FIXED FLAT_FEE MONTHLY 29', 'USAGE FLAT_FEE MONTHLY 0.001 @api_call', 'api_calls 50000 soft MONTHLY'],
    },
    warnings: ['a monthly price of 0 is added'],
  },
  {
    text: 'Business plan $99/month including priority support and 99.9% uptime SLA',
    plans: { business: ['FIXED FLAT_FEE MONTHLY 99', 'priority_support on', 'uptime_sla=99.9%'] },
  },
  { text: 'Support: 24/7, $20/month', plans: { standard: ['FIXED FLAT_FEE MONTHLY 20', 'support=24/7'] } },
  {
    text: 'Team: $15/user/month, 5 projects, unlimited API calls',
    plans: { team: ['FIXED FLAT_FEE MONTHLY 15', 'api_calls unlimited MONTHLY', 'projects=5'] },
  },
  {
    text: 'Starter: $10/month with audit logs. Pro: $30/month, everything in Starter plus SSO',
    plans: { starter: ['FIXED FLAT_FEE MONTHLY 10', 'audit_logs on'], pro: ['FIXED FLAT_FEE MONTHLY 30', 'sso on', 'audit_logs on'] },
  },
  {
    text: '$49/month or $490/year, includes 10k API calls, then $0.002 per call',
    plans: {
      standard: [
        'FIXED FLAT_FEE MONTHLY 49',
        'FIXED FLAT_FEE ANNUAL 490',
        'USAGE FLAT_FEE MONTHLY 0.002 @api_call',
        'USAGE FLAT_FEE ANNUAL 0.002 @api_call',
        'api_calls 10000 soft MONTHLY',
      ],
    },
    warnings: ['applies per billing period'],
  },
  { text: '$49/month, 2.9% per transaction', plans: { standard: ['FIXED FLAT_FEE MONTHLY 49'] }, warnings: ['percentage fees'] },
  { text: 'Pro: $20/month. Our office is in Berlin', plans: { pro: ['FIXED FLAT_FEE MONTHLY 20'] }, warnings: ['not understood'] },
  { text: '$49/month, SSO, audit logs', plans: { standard: ['FIXED FLAT_FEE MONTHLY 49', 'sso on', 'audit_logs on'] } },
  { text: '$20/month, billed through our reseller network', plans: { standard: ['FIXED FLAT_FEE MONTHLY 20'] }, warnings: ['not understood'] },
  { text: '$20/month', options: { plan_name: 'Hobby' }, plans: { hobby: ['FIXED FLAT_FEE MONTHLY 20'] } },
  { text: 'SMS between 1 and 1,000: $0.05, over 1,000: $0.04', plans: { standard: ['USAGE TIERED MONTHLY SLAB|1000:0.05|∞:0.04 @sms', 'sms unlimited MONTHLY'] } },
  { text: 'Enterprise adds SSO and audit logs. Pro: $49/month', plans: { enterprise: ['sso on', 'audit_logs on'], pro: ['FIXED FLAT_FEE MONTHLY 49'] }, warnings: ['plan Enterprise has no price'] },
  { text: 'Business: $99/month with custom domains and SAML', plans: { business: ['FIXED FLAT_FEE MONTHLY 99', 'custom_domains on', 'saml on'] } },
  { text: '$29/month, free for 2 weeks', plans: { standard: ['FIXED FLAT_FEE MONTHLY 29 trial 14'] } },
  { text: 'Pro plan - $15/month, unlimited projects', plans: { pro: ['FIXED FLAT_FEE MONTHLY 15', 'projects=unlimited'] } },
  { text: 'Pro: $49/month. Pro: $59/month', plans: { pro: ['FIXED FLAT_FEE MONTHLY 49', 'FIXED FLAT_FEE MONTHLY 59'] }, warnings: ['more than one MONTHLY price'] },
]

const refused: { text: string; field: string; message: RegExp; options?: ParseOptions }[] = [
  { text: '', field: 'description', message: /must not be empty/ },
  { text: '   \n  ', field: 'description', message: /must not be empty/ },
  { text: 'x'.repeat(4001), field: 'description', message: /at most 4000/ },
  { text: '49 XYZ per month', field: 'currency', message: /"XYZ" is not a currency we know/ },
  { text: 'XYZ 49/month', field: 'currency', message: /"XYZ" is not a currency we know/ },
  { text: '0.001 BTC per call', field: 'currency', message: /"BTC" is not a currency/ },
  { text: '100 doubloons a month', field: 'currency', message: /"doubloons" is not a currency/ },
  { text: '₿0.001 per call', field: 'currency', message: /"₿" is not a currency/ },
  { text: '99 kr/month', field: 'currency', message: /may be SEK, NOK, DKK or ISK/ },
  { text: '$49/month, then €0.01 per call', field: 'currency', message: /USD, EUR: describe one currency/ },
  { text: '49 per month', field: 'currency', message: /no currency given/ },
  { text: '€49 per month', options: { currency: 'USD' }, field: 'currency', message: /in EUR, not USD/ },
  { text: '-$5 per month', field: 'description', message: /cannot be negative/ },
  { text: 'hello world', field: 'description', message: /no price, allowance or feature/ },
  { text: 'pricing to be decided', field: 'description', message: /no price, allowance or feature/ },
  { text: '1-1000 calls: $0.01; 500-2000 calls: $0.008', field: 'description', message: /overlap at 500/ },
  { text: '1-1000 calls: $0.01; 2001-5000 calls: $0.008', field: 'description', message: /gap between 1000 and 2001/ },
]

describe('parsing a pricing description without a model', () => {
  it.each(understood)('$text', (row) => {
    const config = parsePricingDescription(row.text, row.options)
    checkConfig(config)
    const got = summary(config)
    expect(got.plans).toEqual(row.plans)
    expect(got.currency).toBe(row.currency ?? 'USD')
    if (row.meters) expect(got.meters).toEqual(row.meters)
    if (row.features) expect(got.features).toEqual(row.features)
    const warnings = config.warnings.map((w) => w.message)
    if (row.warnings) expect(warnings).toEqual(row.warnings.map((w) => expect.stringContaining(w)))
    else expect(warnings).toEqual([])
  })

  it.each(refused)('refuses $text', ({ text, options, field, message }) => {
    let error: unknown
    try {
      parsePricingDescription(text, options)
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(AppError)
    const e = error as AppError
    expect(e.code).toBe('validation_error')
    expect(Object.keys(e.details)).toContain(field)
    expect(String(e.details[field])).toMatch(message)
  })

  it('marks the warnings that leave part of the description out, apart from notes and assumptions', () => {
    const { warnings } = parsePricingDescription('¥500/month, billed through our reseller network; 2.9% per transaction')
    expect(warnings.map((w) => [w.text, w.left_out])).toEqual([
      ['¥500', false],
      ['billed through our reseller network', true],
      ['2.9% per transaction', false],
    ])
  })

  it('names meters, features and units as a customer would send and read them', () => {
    const config = parsePricingDescription('$49/month includes 10k API calls, then $0.002 per call; 1M tokens free then $3 per million')
    expect(config.meters).toEqual([
      { ref: 'api_call', name: 'API calls', event_name: 'api_call', aggregation: { type: 'COUNT' } },
      { ref: 'token_usage', name: 'Tokens', event_name: 'token_usage', aggregation: { type: 'SUM', field: 'tokens' } },
    ])
    expect(config.features[0]).toEqual({ ref: 'api_calls', name: 'API calls', type: 'metered', lookup_key: 'api_calls', meter_ref: 'api_call', unit_singular: 'API call', unit_plural: 'API calls' })
    expect(config.plans[0]).toMatchObject({ name: 'Standard', lookup_key: 'standard' })
  })
})

describe('checking a configuration', () => {
  const good = () => parsePricingDescription('$49/month includes 10k API calls, then $0.002 per call; SSO on Enterprise')

  it('refuses what creation would refuse, naming the field', () => {
    const cases: [(c: PricingConfig) => void, string][] = [
      [(c) => (c.currency = 'XYZ'), 'currency'],
      [(c) => (c.plans[0].prices[0].amount = '1e3'), 'plans[0].prices[0].amount'],
      [(c) => (c.plans[0].prices[1].meter_ref = 'nope'), 'plans[0].prices[1].meter_ref'],
      [(c) => delete c.plans[0].prices[1].meter_ref, 'plans[0].prices[1].meter_ref'],
      [(c) => (c.plans[0].prices[0].trial_period_days = 3) && (c.plans[0].prices[0].billing_period = 'ONETIME'), 'plans[0].prices[0].trial_period_days'],
      [(c) => (c.plans[0].entitlements[0].feature_ref = 'nope'), 'plans[0].entitlements[0].feature_ref'],
      [(c) => delete c.plans[0].entitlements[0].usage_reset_period, 'plans[0].entitlements[0].usage_reset_period'],
      [(c) => (c.plans[1].entitlements[0].usage_limit = 5), 'plans[1].entitlements[0].usage_limit'],
      [(c) => (c.features[0].meter_ref = undefined), 'features[0].meter_ref'],
      [(c) => (c.meters[0].aggregation = { type: 'SUM' }), 'meters[0].aggregation.field'],
      [(c) => c.features.push({ ...c.features[1] }), 'features[2].ref'],
      [(c) => (c.plans[1].lookup_key = c.plans[0].lookup_key), 'plans[1].lookup_key'],
    ]
    for (const [change, field] of cases) {
      const config = good()
      change(config)
      let error: AppError | undefined
      try {
        checkConfig(config)
      } catch (err) {
        error = err as AppError
      }
      expect(error?.details, field).toHaveProperty([field])
    }
  })
})
