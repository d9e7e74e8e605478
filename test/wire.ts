// The API's JSON as the end-to-end tests read it: the fields they look at, decimals and instants as the
// strings the wire carries.

export interface LineItemWire {
  id: string
  display_name: string
  description: string
  price_type: string
  quantity: string
  amount: string
  subscription_id: string | null
  subscription_line_item_id: string | null
  customer_id: string
  period_start: string
  period_end: string
  prepaid_credits_applied: string
  line_item_discount: string
  invoice_level_discount: string
  tax_amount: string
  commitment_info?: { amount: string; computed_commitment_utilized_amount: string; computed_overage_amount: string; computed_true_up_amount: string } | null
  usage_analytics?: { usage: string; cost: string }[]
}

export interface InvoiceWire {
  id: string
  invoice_number: string
  invoice_status: string
  payment_status: string
  billing_reason: string
  billing_sequence: number
  period_start: string
  period_end: string
  subtotal: string
  total: string
  amount_due: string
  amount_paid: string
  amount_remaining: string
  adjustment_amount: string
  line_items: LineItemWire[]
  coupon_applications: { coupon_id: string; discounted_amount: string; original_price: string; final_price: string }[]
  taxes: { taxable_amount: string; tax_amount: string; tax_rate: { code: string } }[]
}

export interface SubscriptionLineItemWire {
  id: string
  end_date: string | null
  end_proration_behavior: string | null
}

export interface SubscriptionWire {
  id: string
  customer_id: string
  line_items: SubscriptionLineItemWire[]
}

/** A proration's lines, as modify and cancel answer them. */
export interface ProrationLineWire {
  description: string
  amount: string
}

export interface CustomerWire {
  id: string
  external_id: string
}

export interface Page<T> {
  items: T[]
}

export interface WebhookEndpointWire {
  id: string
  url: string
  /** Only in the answers to create and rotate. */
  secret: string
}

interface WebhookDeliveryWire {
  endpoint_id: string
  delivery_status: string
  attempts: number
  last_status_code: number | null
  last_error: string | null
  next_attempt_at: string | null
}

export interface WebhookEventWire {
  id: string
  event_type: string
  delivery_status: string
  deliveries: WebhookDeliveryWire[]
}

export interface WebhookAttemptWire {
  endpoint_id: string
  url: string
  response_status_code: number | null
  response: string | null
  error: string | null
}
