-- Invoices and their line items, and the gap-free number sequences. Money is numeric (exact); every
-- row carries the common record columns. Line items are locked once their invoice is finalized (the
-- service refuses changes; nothing edits them after).

CREATE TABLE invoices (
  id                            text PRIMARY KEY,
  tenant_id                     text NOT NULL,
  environment_id                text NOT NULL,
  customer_id                   text NOT NULL,
  subscription_id               text,
  -- The subscription's owner: differs from customer_id when an invoicing customer pays.
  subscription_customer_id      text,
  invoice_number                text,
  invoice_status                text NOT NULL CHECK (invoice_status IN ('DRAFT', 'FINALIZED', 'VOIDED', 'SKIPPED')),
  invoice_type                  text NOT NULL CHECK (invoice_type IN ('SUBSCRIPTION', 'ONE_OFF', 'CREDIT')),
  payment_status                text NOT NULL CHECK (payment_status IN ('INITIATED', 'PENDING', 'PROCESSING', 'SUCCEEDED', 'OVERPAID', 'FAILED', 'REFUNDED', 'PARTIALLY_REFUNDED')),
  billing_reason                text NOT NULL,
  billing_period                text,
  billing_sequence              integer,
  currency                      text NOT NULL,
  subtotal                      numeric NOT NULL,
  total_discount                numeric NOT NULL DEFAULT 0,
  total_tax                     numeric NOT NULL DEFAULT 0,
  total                         numeric NOT NULL,
  amount_due                    numeric NOT NULL,
  amount_paid                   numeric NOT NULL DEFAULT 0,
  amount_remaining              numeric NOT NULL,
  adjustment_amount             numeric NOT NULL DEFAULT 0,
  refunded_amount               numeric NOT NULL DEFAULT 0,
  overpaid_amount               numeric NOT NULL DEFAULT 0,
  total_prepaid_credits_applied numeric NOT NULL DEFAULT 0,
  description                   text,
  due_date                      timestamptz,
  period_start                  timestamptz,
  period_end                    timestamptz,
  issue_date                    date,
  finalized_at                  timestamptz,
  paid_at                       timestamptz,
  voided_at                     timestamptz,
  last_computed_at              timestamptz,
  -- A subscription draft is finalized by the billing run once this passes (grace for late events).
  finalize_after                timestamptz,
  overdue_notified_at           timestamptz,
  recalculated_invoice_id       text,
  idempotency_key               text,
  invoice_pdf_url               text,
  -- What the amounts were computed from besides the lines: coupon uses and tax rates, as resolved.
  coupon_uses                   jsonb NOT NULL DEFAULT '[]',
  tax_rate_overrides            jsonb NOT NULL DEFAULT '[]',
  prepared_tax_rates            jsonb NOT NULL DEFAULT '[]',
  status                        text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata                      jsonb NOT NULL DEFAULT '{}',
  version                       integer NOT NULL DEFAULT 1,
  created_at                    timestamptz NOT NULL DEFAULT now(),
  created_by                    text,
  updated_at                    timestamptz NOT NULL DEFAULT now(),
  updated_by                    text,
  CHECK (amount_due <= total OR total < 0),
  CHECK (amount_paid >= 0 AND amount_remaining >= 0)
);
CREATE INDEX invoices_scope ON invoices (tenant_id, environment_id, created_at);
CREATE INDEX invoices_customer ON invoices (tenant_id, environment_id, customer_id);
CREATE INDEX invoices_subscription ON invoices (subscription_id, billing_sequence) WHERE subscription_id IS NOT NULL;
CREATE INDEX invoices_to_finalize ON invoices (finalize_after) WHERE invoice_status = 'DRAFT' AND finalize_after IS NOT NULL;
CREATE INDEX invoices_overdue ON invoices (due_date) WHERE invoice_status = 'FINALIZED' AND overdue_notified_at IS NULL;
CREATE UNIQUE INDEX invoices_number ON invoices (tenant_id, environment_id, invoice_number) WHERE invoice_number IS NOT NULL;
-- Rule 11: voided and deleted invoices do not hold their idempotency key.
CREATE UNIQUE INDEX invoices_idempotency_key ON invoices (tenant_id, environment_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL AND invoice_status <> 'VOIDED' AND status <> 'deleted';
-- Never two invoices for one subscription period: whatever reruns or races, the second insert fails.
CREATE UNIQUE INDEX invoices_subscription_period ON invoices (subscription_id, period_start, billing_reason)
  WHERE subscription_id IS NOT NULL AND invoice_status <> 'VOIDED' AND status <> 'deleted';

CREATE TABLE invoice_line_items (
  id                      text PRIMARY KEY,
  tenant_id               text NOT NULL,
  environment_id          text NOT NULL,
  invoice_id              text NOT NULL REFERENCES invoices(id),
  -- Order on the invoice: coupons and taxes address lines by it.
  position                integer NOT NULL,
  customer_id             text NOT NULL,
  subscription_id         text,
  subscription_line_item_id text,
  entity_id               text,
  entity_type             text,
  plan_id                 text,
  plan_display_name       text,
  display_name            text,
  price_id                text,
  price_type              text CHECK (price_type IN ('FIXED', 'USAGE')),
  price_unit              text,
  price_unit_id           text,
  price_unit_amount       numeric,
  meter_id                text,
  meter_display_name      text,
  currency                text NOT NULL,
  quantity                numeric NOT NULL,
  amount                  numeric NOT NULL,
  line_item_discount      numeric NOT NULL DEFAULT 0,
  invoice_level_discount  numeric NOT NULL DEFAULT 0,
  tax_amount              numeric NOT NULL DEFAULT 0,
  prepaid_credits_applied numeric NOT NULL DEFAULT 0,
  commitment_info         jsonb,
  -- How the amount was reached: the price terms, tiers crossed, proration factor, usage window.
  calculation             jsonb,
  period_start            timestamptz,
  period_end              timestamptz,
  status                  text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata                jsonb NOT NULL DEFAULT '{}',
  version                 integer NOT NULL DEFAULT 1,
  created_at              timestamptz NOT NULL DEFAULT now(),
  created_by              text,
  updated_at              timestamptz NOT NULL DEFAULT now(),
  updated_by              text,
  UNIQUE (invoice_id, position)
);
CREATE INDEX invoice_line_items_invoice ON invoice_line_items (invoice_id, position);

-- Gap-free numbers: one counter row per environment and scope (e.g. "INV-202405-"), incremented under
-- its row lock in the transaction that uses the number, so a rollback gives the number back.
CREATE TABLE number_sequences (
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  scope          text NOT NULL,
  last_value     bigint NOT NULL,
  PRIMARY KEY (tenant_id, environment_id, scope)
);
