// POST /v1/webhook-events/wallet.credit_balance.recovered documents the event by example: exactly the
// spec's payload {event_type, customer, wallet, alert: {alert_settings, alert_type, credit_balance,
// current_balance, state}}, with the same field sets the outbox writes (watch.ts moveAlert).
const AT = '2025-01-15T10:00:00.000Z'
const audit = { tenant_id: 'tenant_example', environment_id: 'env_example', status: 'published', created_at: AT, created_by: 'key_example', updated_at: AT, updated_by: 'key_example' }
const alertSettings = { alert_enabled: true, info: { condition: 'below', threshold: 100 }, warning: { condition: 'below', threshold: 50 }, critical: { condition: 'below', threshold: 10 } }

export function examplePayload(): Record<string, unknown> {
  return {
    event_type: 'wallet.credit_balance.recovered',
    customer: {
      id: 'cus_example',
      external_id: 'customer-42',
      name: 'Example Inc.',
      email: 'billing@example.com',
      address_line1: null,
      address_line2: null,
      address_city: null,
      address_state: null,
      address_postal_code: null,
      address_country: 'US',
      metadata: {},
      integrations: [],
      test_clock_id: null,
      version: 1,
      ...audit,
    },
    wallet: {
      id: 'wallet_example',
      customer_id: 'cus_example',
      name: 'Prepaid Wallet - USD',
      description: null,
      currency: 'USD',
      wallet_status: 'active',
      wallet_type: 'PRE_PAID',
      balance: '70.00',
      credit_balance: '70',
      credits_available_breakdown: { free: '20', purchased: '50' },
      held_balance: '0',
      available_balance: '70',
      conversion_rate: '1',
      topup_conversion_rate: '1',
      config: { allowed_price_types: ['ALL'] },
      auto_topup: null,
      alert_settings: alertSettings,
      alert_state: 'info',
      ongoing_alert_state: 'ok',
      metadata: {},
      version: 3,
      ...audit,
    },
    alert: { alert_settings: alertSettings, alert_type: 'low_credit_balance', credit_balance: 70, current_balance: 70, state: 'info' },
  }
}
